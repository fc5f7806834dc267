#include "server.h"

#include <httplib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <utility>

#include "api.h"
#include "assets.h"
#include "controller/kinds.h"

namespace ayatori::plugin::ui {

namespace {

using nlohmann::json;

// Scripts, styles, images and requests of this origin only; no inline script or style, no
// framing, no form posts, no <base>.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
// A request (its line and headers) must arrive within this; a followed log may be silent longer.
constexpr time_t kReadTimeoutSeconds = 5;
constexpr time_t kWriteTimeoutSeconds = 30;

api::Time Now() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

std::optional<std::string> Header(const httplib::Request& req, const char* name) {
  if (!req.has_header(name)) return std::nullopt;
  return req.get_header_value(name);
}

// One event of the log stream (text/event-stream framing, read by the page with fetch, since
// EventSource cannot send the API header): `data` is one JSON value on one line, so nothing
// the task prints can end an event or forge another.
std::string Event(const char* type, const json& data) {
  return std::string("event: ") + type +
         "\ndata: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace

bool IsLoopback(const std::string& address) {
  if (address == "::1") return true;
  int a = 0, b = 0, c = 0, d = 0;
  char tail = 0;
  if (std::sscanf(address.c_str(), "%d.%d.%d.%d%c", &a, &b, &c, &d, &tail) != 4) return false;
  for (int part : {a, b, c, d}) {
    if (part < 0 || part > 255) return false;
  }
  return a == 127;
}

std::string TakeCompleteUtf8(std::string& carry, std::string_view data) {
  std::string text = std::move(carry);
  text.append(data);
  carry.clear();
  // Look back over at most 3 bytes for the lead byte of a character the chunk cut.
  size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto byte = static_cast<unsigned char>(text[n - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    size_t length = 1;
    if ((byte & 0xE0) == 0xC0) length = 2;
    if ((byte & 0xF0) == 0xE0) length = 3;
    if ((byte & 0xF8) == 0xF0) length = 4;
    if (length > back) {
      carry = text.substr(n - back);
      text.resize(n - back);
    }
    break;
  }
  return text;
}

Server::Server(KubeClient& client, PathStreamer streamer, ServerOptions options, std::string token)
    : client_(client), streamer_(std::move(streamer)), options_(std::move(options)) {
  guard_.token = std::move(token);
}

Server::~Server() { Stop(); }

Status Server::Start() {
  if (!IsLoopback(options_.address)) {
    return {StatusCode::kInvalidArgument,
            "--address " + options_.address +
                " is not a loopback address: the page acts with your cluster credentials, so "
                "it is served to this machine only (use 127.0.0.1 or ::1)"};
  }
  if (options_.port < 0 || options_.port > 65535) {
    return {StatusCode::kInvalidArgument,
            "--port " + std::to_string(options_.port) + " is not a port (0 picks a free one)"};
  }
  http_ = std::make_unique<httplib::Server>();
  http_->new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
  http_->set_read_timeout(kReadTimeoutSeconds, 0);
  http_->set_write_timeout(kWriteTimeoutSeconds, 0);
  http_->set_payload_max_length(kMaxRequestBody);
  errno = 0;
  const int bound =
      options_.port == 0
          ? http_->bind_to_any_port(options_.address)
          : (http_->bind_to_port(options_.address, options_.port) ? options_.port : -1);
  if (bound < 0) {
    return {StatusCode::kUnavailable, "cannot listen on " + options_.address + ":" +
                                          std::to_string(options_.port) + ": " +
                                          (errno != 0 ? std::strerror(errno) : "bind failed")};
  }
  port_ = bound;
  guard_.hosts = HostsFor(options_.address, port_);
  guard_.cookieName = "ayatori-ui-" + std::to_string(port_);
  Route();
  auto listening = std::make_shared<std::atomic<bool>>(true);
  thread_ = std::thread([this, listening] {
    http_->listen_after_bind();
    *listening = false;
  });
  // httplib's stop() does nothing before its loop runs: wait for the loop, so that a Stop()
  // right after Start() is not lost (the thread would then serve forever).
  while (!http_->is_running() && *listening)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return Status::Ok();
}

void Server::Stop() {
  stop_.request_stop();
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string Server::Url() const {
  return "http://" + guard_.hosts.front() + "/?token=" + guard_.token;
}

void Server::Reply(httplib::Response& res, int code, const json& body) const {
  res.status = code;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void Server::Route() {
  http_->set_default_headers({{"Content-Security-Policy", kContentSecurityPolicy},
                              {"X-Content-Type-Options", "nosniff"},
                              {"X-Frame-Options", "DENY"},
                              {"Referrer-Policy", "no-referrer"},
                              {"Cache-Control", "no-store"},
                              {"Cross-Origin-Resource-Policy", "same-origin"}});
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return Admit(req, res) ? httplib::Server::HandlerResponse::Unhandled
                           : httplib::Server::HandlerResponse::Handled;
  });
  RouteStatic();
  RouteApi();
  http_->set_exception_handler(
      [this](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
        Reply(res, 500,
              {{"error", {{"code", 500}, {"reason", "Internal"}, {"message", "internal error"}}}});
      });
}

bool Server::Admit(const httplib::Request& req, httplib::Response& res) {
  if (req.method != "GET" && req.method != "HEAD" && req.method != "POST") {
    res.set_header("Allow", "GET, HEAD, POST");
    Reply(res, 405,
          {{"error",
            {{"code", 405},
             {"reason", "MethodNotAllowed"},
             {"message", "method " + req.method + " is not served"}}}});
    return false;
  }
  RequestFacts facts{
      req.method,
      req.path,
      Header(req, "Host"),
      Header(req, "Origin"),
      Header(req, "Cookie"),
      Header(req, kApiHeader),
      req.has_param("token") ? std::optional(req.get_param_value("token")) : std::nullopt};
  const Verdict verdict = Check(guard_, facts);
  switch (verdict.kind) {
    case Verdict::Kind::kAllow:
      return true;
    case Verdict::Kind::kExchange:
      // The token leaves the address bar (and the history) at once.
      res.set_header("Set-Cookie", SetCookieHeader(guard_));
      res.set_redirect(req.path, 303);
      return false;
    case Verdict::Kind::kRefuse:
      break;
  }
  Reply(res, verdict.code,
        {{"error", {{"code", verdict.code}, {"reason", "Refused"}, {"message", verdict.reason}}}});
  return false;
}

void Server::RouteStatic() {
  auto serveAsset = [](std::string_view path, httplib::Response& res) {
    const Asset* asset = FindAsset(path);
    if (asset == nullptr) {
      res.status = 404;
      res.set_content("not found", "text/plain; charset=utf-8");
      return;
    }
    res.set_content(asset->body.data(), asset->body.size(), std::string(asset->contentType));
  };
  http_->Get("/", [serveAsset](const httplib::Request&, httplib::Response& res) {
    serveAsset("/index.html", res);
  });
  http_->Get(R"(/static/([a-z0-9_-]+\.(js|css|svg)))",
             [serveAsset](const httplib::Request& req, httplib::Response& res) {
               serveAsset("/" + req.matches[1].str(), res);
             });
}

void Server::RouteApi() {
  http_->Get("/api/config", [this](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200,
          {{"namespace", options_.allNamespaces ? "" : options_.namespace_},
           {"allNamespaces", options_.allNamespaces}});
  });
  http_->Get("/api/namespaces", [this](const httplib::Request&, httplib::Response& res) {
    const ApiAnswer a = NamespacesAnswer(client_);
    Reply(res, a.code, a.body);
  });
  http_->Get("/api/classes", [this](const httplib::Request&, httplib::Response& res) {
    const ApiAnswer a = ClassesAnswer(client_);
    Reply(res, a.code, a.body);
  });
  http_->Get("/api/jobs", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string ns = req.get_param_value("namespace");
    if (!ns.empty() && !ValidName(ns)) {
      Reply(res, 400,
            ErrorAnswer({StatusCode::kInvalidArgument, "\"" + ns + "\" is not a name"}, "list jobs")
                .body);
      return;
    }
    const ApiAnswer a = JobsAnswer(client_, ns, Now());
    Reply(res, a.code, a.body);
  });
  RouteJobApi();
}

void Server::RouteJobApi() {
  // /api/namespaces/NS/jobs/NAME[/events|/log|/cancel]; NS and NAME are checked names.
  const std::string job = R"(/api/namespaces/([a-z0-9.-]{1,253})/jobs/([a-z0-9.-]{1,253}))";
  http_->Get(job, [this](const httplib::Request& req, httplib::Response& res) {
    const ApiAnswer a = JobAnswer(client_, req.matches[1], req.matches[2], Now());
    Reply(res, a.code, a.body);
  });
  http_->Get(job + "/events", [this](const httplib::Request& req, httplib::Response& res) {
    const ApiAnswer a = EventsAnswer(client_, req.matches[1], req.matches[2]);
    Reply(res, a.code, a.body);
  });
  http_->Get(job + "/log",
             [this](const httplib::Request& req, httplib::Response& res) { ServeLog(req, res); });
  http_->Post(job + "/cancel", [this](const httplib::Request& req, httplib::Response& res) {
    const ApiAnswer a = CancelAnswer(client_, req.matches[1], req.matches[2]);
    Reply(res, a.code, a.body);
  });
}

bool Server::ParseLogOptions(const httplib::Request& req, httplib::Response& res,
                             LogOptions& options) const {
  options.follow = req.get_param_value("follow") == "true";
  if (!req.has_param("tailLines")) return true;
  const std::string text = req.get_param_value("tailLines");
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || n < 0 || n > kMaxTailLines) {
    Reply(res, 400,
          ErrorAnswer({StatusCode::kInvalidArgument, "tailLines \"" + text +
                                                         "\" must be a number from 0 to " +
                                                         std::to_string(kMaxTailLines)},
                      "read the log")
              .body);
    return false;
  }
  options.tailLines = n;
  return true;
}

void Server::ServeLog(const httplib::Request& req, httplib::Response& res) {
  const std::string ns = req.matches[1];
  const std::string name = req.matches[2];
  LogOptions options;
  if (!ParseLogOptions(req, res, options)) return;
  // A Job that does not exist, or may not be read, is answered as JSON before the stream starts.
  if (auto got = client_.Get(controller::kJobs, ns, name); !got.ok()) {
    const ApiAnswer a = ErrorAnswer(got.status(), "get job \"" + name + "\"");
    Reply(res, a.code, a.body);
    return;
  }
  const std::string path = LogPath(ns, name, options);
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, path](size_t /*offset*/, httplib::DataSink& sink) { return StreamLog(path, sink); });
}

bool Server::StreamLog(const std::string& path, httplib::DataSink& sink) {
  // Ends the read of the log API when the client went away or the server stops.
  std::stop_source ended;
  const std::stop_callback serverStopped(stop_.get_token(), [&] { ended.request_stop(); });
  std::mutex writing;
  bool clientGone = false;
  auto write = [&](const std::string& text) {
    const std::lock_guard<std::mutex> lock(writing);
    if (!clientGone && !sink.write(text.data(), text.size())) {
      clientGone = true;
      ended.request_stop();
    }
    return !clientGone;
  };
  std::jthread heartbeat([&, interval = options_.logHeartbeat](const std::stop_token& stop) {
    std::mutex m;
    std::condition_variable_any wake;
    std::unique_lock<std::mutex> lock(m);
    while (true) {
      (void)wake.wait_for(lock, stop, interval, [] { return false; });
      if (stop.stop_requested() || !write(": keep-alive\n\n")) return;
    }
  });
  std::string carry;
  const Status streamed = streamer_(path, ended.get_token(), [&](std::string_view data) {
    const std::string text = TakeCompleteUtf8(carry, data);
    return text.empty() || write(Event("log", text));
  });
  heartbeat.request_stop();
  heartbeat.join();
  if (clientGone) return false;
  std::string last;
  if (!carry.empty()) last += Event("log", carry);
  if (!streamed.ok() && !stop_.stop_requested()) {
    last += Event("error", ErrorAnswer(streamed, "read the log").body["error"]);
  } else {
    last += Event("end", json::object());
  }
  write(last);
  sink.done();
  return true;
}

}  // namespace ayatori::plugin::ui

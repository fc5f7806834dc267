// A small HTTP/1.1 server for the execd stand-in (docs/opensandbox.md § execd stand-in).
//
// Why not cpp-httplib: the stand-in must be linked statically (it is copied into sandbox images
// of any libc), and Debian's libcpp-httplib-dev ships the library split into a header and a
// shared object only (libcpp-httplib.so, no .a), so it cannot be linked with -static. The few
// routes of the stand-in need little: requests with Content-Length bodies, keep-alive, plain
// responses and one chunked (event-stream) response. One thread per connection.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace execd_standin {

struct Request {
  std::string method;
  std::string path;                            // percent-decoded, without the query
  std::map<std::string, std::string> query;    // percent-decoded; the last value of a repeated key
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

struct Response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// Writes one chunk of a chunked response; false once the client is gone.
using ChunkWriter = std::function<bool(const std::string& data)>;

// What a handler answers: a whole response, or a chunked stream whose headers are sent first and
// whose body `stream` writes chunk by chunk.
struct Reply {
  Response response;
  std::function<void(const ChunkWriter&)> stream;  // set for chunked replies
};

using Handler = std::function<Reply(const Request&)>;

// Listens on host:port (numeric address only: a static binary has no NSS), serves until the
// process ends. Returns false with `error` set when the socket cannot be bound.
bool Serve(const std::string& host, int port, const Handler& handler, std::string& error);

std::string PercentDecode(const std::string& s);

}  // namespace execd_standin

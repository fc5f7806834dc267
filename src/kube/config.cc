#include "kube/config.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

namespace ayatori::kube {
namespace {

namespace fs = std::filesystem;

Status Invalid(const std::string& where, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, where + ": " + what);
}

// Reads a whole file; the error names the file and the OS reason.
StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    return Status(StatusCode::kInvalidArgument,
                  "cannot read " + path + ": " + std::strerror(err != 0 ? err : ENOENT));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status(StatusCode::kInvalidArgument, "cannot read " + path);
  return ss.str();
}

// Number of PEM certificates in `pem`, or -1 if it has none / garbage.
int CountCertificates(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  int n = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++n;
  }
  ERR_clear_error();
  return n;
}

// Empty when the certificate and key are valid PEM and belong together; else the problem.
std::string CheckKeyPair(const std::string& certPem, const std::string& keyPem, bool* keyBad) {
  *keyBad = false;
  std::unique_ptr<BIO, decltype(&BIO_free)> cb(
      BIO_new_mem_buf(certPem.data(), static_cast<int>(certPem.size())), &BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr), &X509_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> kb(
      BIO_new_mem_buf(keyPem.data(), static_cast<int>(keyPem.size())), &BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  ERR_clear_error();
  if (!cert) return "no PEM certificate found";
  if (!key) {
    *keyBad = true;
    return "no PEM private key found";
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    *keyBad = true;
    return "the private key does not match the client certificate";
  }
  return "";
}

// One named entry (cluster, user or context) and the file it came from.
struct Entry {
  YAML::Node node;
  std::string file;
};

struct Merged {
  std::string currentContext;
  std::string currentContextFile;
  std::map<std::string, Entry> clusters, users, contexts;
  std::vector<std::string> files;  // files actually read
};

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

// "where.key", or "where key" when `where` names a file ("kubeconfig /p:").
std::string Join(const std::string& where, const char* key) {
  return where + (!where.empty() && where.back() == ':' ? " " : ".") + key;
}

// Reads an optional scalar field as a string; an error if it is present but not a scalar.
Status ScalarField(const YAML::Node& parent, const char* key, const std::string& where,
                   std::string* out) {
  YAML::Node n = parent[key];
  if (!n.IsDefined() || n.IsNull()) return Status::Ok();
  if (!n.IsScalar()) return Invalid(Join(where, key), "must be a string");
  *out = n.Scalar();
  return Status::Ok();
}

Status BoolField(const YAML::Node& parent, const char* key, const std::string& where, bool* out) {
  YAML::Node n = parent[key];
  if (!n.IsDefined() || n.IsNull()) return Status::Ok();
  std::string v = n.IsScalar() ? n.Scalar() : "";
  if (v == "true" || v == "True" || v == "TRUE") {
    *out = true;
  } else if (v == "false" || v == "False" || v == "FALSE") {
    *out = false;
  } else {
    return Invalid(Join(where, key), "must be true or false");
  }
  return Status::Ok();
}

// Adds the named list `key` (clusters/users/contexts) of `doc` to `into`; first wins.
Status CollectNamed(const YAML::Node& doc, const char* key, const char* inner,
                    const std::string& file, std::map<std::string, Entry>* into) {
  const std::string where = "kubeconfig " + file + ": " + key;
  YAML::Node list = doc[key];
  if (!list.IsDefined() || list.IsNull()) return Status::Ok();
  if (!list.IsSequence()) return Invalid(where, "must be a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    YAML::Node item = list[i];
    std::string at = where + "[" + std::to_string(i) + "]";
    if (!item.IsMap()) return Invalid(at, "must be a mapping with name and " + std::string(inner));
    std::string name;
    if (Status s = ScalarField(item, "name", at, &name); !s.ok()) return s;
    if (name.empty()) return Invalid(at + ".name", "is missing");
    YAML::Node body = item[inner];
    if (body.IsDefined() && !body.IsNull() && !body.IsMap()) {
      return Invalid(where + "[" + Quote(name) + "]." + inner, "must be a mapping");
    }
    into->emplace(name, Entry{body, file});
  }
  return Status::Ok();
}

// Parses the text of the kubeconfig file `path` into `m`.
Status MergeText(const std::string& text, const std::string& path, Merged* m) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status(StatusCode::kInvalidArgument, "kubeconfig " + path + ": invalid YAML at line " +
                                                    std::to_string(e.mark.line + 1) + ", column " +
                                                    std::to_string(e.mark.column + 1) + ": " +
                                                    e.msg);
  }
  if (doc.IsNull() || !doc.IsDefined()) {
    m->files.push_back(path);
    return Status::Ok();  // an empty file contributes nothing (client-go accepts it)
  }
  if (!doc.IsMap()) {
    return Status(StatusCode::kInvalidArgument,
                  "kubeconfig " + path + ": top level must be a mapping (kind: Config)");
  }
  try {
    std::string kind;
    if (Status s = ScalarField(doc, "kind", "kubeconfig " + path + ":", &kind); !s.ok()) return s;
    if (!kind.empty() && kind != "Config") {
      return Invalid("kubeconfig " + path + ": kind", "is " + Quote(kind) + ", expected Config");
    }
    std::string current;
    if (Status s = ScalarField(doc, "current-context", "kubeconfig " + path + ":", &current);
        !s.ok()) {
      return s;
    }
    if (m->currentContext.empty() && !current.empty()) {
      m->currentContext = current;
      m->currentContextFile = path;
    }
    if (Status s = CollectNamed(doc, "clusters", "cluster", path, &m->clusters); !s.ok()) return s;
    if (Status s = CollectNamed(doc, "users", "user", path, &m->users); !s.ok()) return s;
    if (Status s = CollectNamed(doc, "contexts", "context", path, &m->contexts); !s.ok()) return s;
  } catch (const YAML::Exception& e) {
    return Status(StatusCode::kInvalidArgument, "kubeconfig " + path + ": " + e.msg);
  }
  m->files.push_back(path);
  return Status::Ok();
}

// Parses one file into `m`. `mustExist`: a missing file is an error (else skipped).
Status MergeFile(const std::string& path, bool mustExist, Merged* m) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (mustExist) {
      return Status(StatusCode::kInvalidArgument, "kubeconfig " + path + ": file does not exist");
    }
    return Status::Ok();
  }
  auto text = ReadFile(path);
  if (!text.ok()) {
    return Status(StatusCode::kInvalidArgument,
                  "kubeconfig " + path + ": " + text.status().message());
  }
  return MergeText(*text, path, m);
}

std::string Resolve(const std::string& file, const std::string& p) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  return (fs::path(file).parent_path() / p).lexically_normal().string();
}

// Reads `<key>-data` (base64) or `<key>` (a file path) from a cluster/user mapping.
Status DataOrFile(const Entry& e, const std::string& where, const char* fileKey,
                  const char* dataKey, std::string* out, bool* present) {
  std::string data, file;
  if (Status s = ScalarField(e.node, dataKey, where, &data); !s.ok()) return s;
  if (Status s = ScalarField(e.node, fileKey, where, &file); !s.ok()) return s;
  *present = !data.empty() || !file.empty();
  if (!data.empty()) {
    if (!Base64Decode(data, out)) {
      return Invalid(where + "." + dataKey, "not valid base64");
    }
    return Status::Ok();
  }
  if (!file.empty()) {
    std::string abs = Resolve(e.file, file);
    auto content = ReadFile(abs);
    if (!content.ok()) return Invalid(where + "." + fileKey, content.status().message());
    *out = std::move(*content);
  }
  return Status::Ok();
}

StatusOr<RestConfig> Build(const Merged& m, const ConfigLoadOptions& options) {
  std::string files;
  for (const auto& f : m.files) files += (files.empty() ? "" : ":") + f;
  const std::string kc = "kubeconfig " + files;
  std::string ctxName = options.context;
  if (ctxName.empty()) {
    ctxName = m.currentContext;
    if (ctxName.empty()) {
      return Invalid(kc + ": current-context",
                     "is not set and no context was named (use a --context flag or "
                     "`kubectl config use-context`)");
    }
  }
  auto ctx = m.contexts.find(ctxName);
  if (ctx == m.contexts.end()) {
    std::string known;
    for (const auto& [name, _] : m.contexts) known += (known.empty() ? "" : ", ") + name;
    return Invalid(kc + ": " + (options.context.empty() ? "current-context" : "context"),
                   "names context " + Quote(ctxName) + ", which is not in contexts[] (known: " +
                       (known.empty() ? "none" : known) + ")");
  }
  const std::string ctxWhere =
      "kubeconfig " + ctx->second.file + ": contexts[" + Quote(ctxName) + "].context";
  if (!ctx->second.node.IsDefined() || !ctx->second.node.IsMap()) {
    return Invalid(ctxWhere, "is missing");
  }
  RestConfig cfg;
  std::string clusterName, userName;
  if (Status s = ScalarField(ctx->second.node, "cluster", ctxWhere, &clusterName); !s.ok()) {
    return s;
  }
  if (Status s = ScalarField(ctx->second.node, "user", ctxWhere, &userName); !s.ok()) return s;
  if (Status s = ScalarField(ctx->second.node, "namespace", ctxWhere, &cfg.namespace_); !s.ok()) {
    return s;
  }
  if (clusterName.empty()) return Invalid(ctxWhere + ".cluster", "is missing");
  auto cl = m.clusters.find(clusterName);
  if (cl == m.clusters.end()) {
    return Invalid(ctxWhere + ".cluster",
                   "names cluster " + Quote(clusterName) + ", which is not in clusters[]");
  }
  const std::string clWhere =
      "kubeconfig " + cl->second.file + ": clusters[" + Quote(clusterName) + "].cluster";
  if (!cl->second.node.IsDefined() || !cl->second.node.IsMap()) {
    return Invalid(clWhere, "is missing");
  }
  if (Status s = ScalarField(cl->second.node, "server", clWhere, &cfg.server); !s.ok()) return s;
  if (cfg.server.empty()) return Invalid(clWhere + ".server", "is missing");
  if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0) {
    return Invalid(clWhere + ".server", Quote(cfg.server) + " is not an http:// or https:// URL");
  }
  while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
  for (const char* unsupported : {"tls-server-name", "proxy-url"}) {
    if (cl->second.node[unsupported].IsDefined()) {
      return Invalid(clWhere + "." + unsupported, "is not supported by this client");
    }
  }
  bool caPresent = false;
  if (Status s = DataOrFile(cl->second, clWhere, "certificate-authority",
                            "certificate-authority-data", &cfg.caPem, &caPresent);
      !s.ok()) {
    return s;
  }
  if (caPresent && CountCertificates(cfg.caPem) == 0) {
    return Invalid(clWhere + "." +
                       (cl->second.node["certificate-authority-data"].IsDefined()
                            ? "certificate-authority-data"
                            : "certificate-authority"),
                   "contains no PEM certificate");
  }
  if (Status s = BoolField(cl->second.node, "insecure-skip-tls-verify", clWhere,
                           &cfg.insecureSkipTlsVerify);
      !s.ok()) {
    return s;
  }
  if (cfg.insecureSkipTlsVerify) {
    if (!options.allowInsecureSkipTlsVerify) {
      return Invalid(clWhere + ".insecure-skip-tls-verify",
                     "is true, which disables verification of the server certificate; refused "
                     "(remove it and set certificate-authority-data, or explicitly allow "
                     "insecure connections)");
    }
    if (caPresent) {
      return Invalid(clWhere + ".insecure-skip-tls-verify",
                     "cannot be combined with a certificate authority");
    }
  }

  cfg.source = "kubeconfig " + files + " context " + ctxName;
  if (userName.empty()) return cfg;  // anonymous
  auto us = m.users.find(userName);
  if (us == m.users.end()) {
    return Invalid(ctxWhere + ".user",
                   "names user " + Quote(userName) + ", which is not in users[]");
  }
  const std::string usWhere =
      "kubeconfig " + us->second.file + ": users[" + Quote(userName) + "].user";
  if (!us->second.node.IsDefined() || us->second.node.IsNull()) return cfg;
  for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
    if (us->second.node[unsupported].IsDefined()) {
      return Invalid(usWhere + "." + unsupported,
                     "is not supported by this client; use a token, tokenFile or a client "
                     "certificate");
    }
  }
  bool certPresent = false, keyPresent = false;
  if (Status s = DataOrFile(us->second, usWhere, "client-certificate", "client-certificate-data",
                            &cfg.clientCertPem, &certPresent);
      !s.ok()) {
    return s;
  }
  if (Status s = DataOrFile(us->second, usWhere, "client-key", "client-key-data", &cfg.clientKeyPem,
                            &keyPresent);
      !s.ok()) {
    return s;
  }
  const char* certField = us->second.node["client-certificate-data"].IsDefined()
                              ? "client-certificate-data"
                              : "client-certificate";
  const char* keyField =
      us->second.node["client-key-data"].IsDefined() ? "client-key-data" : "client-key";
  if (certPresent != keyPresent) {
    return Invalid(usWhere + "." + (certPresent ? keyField : certField),
                   "is missing (a client certificate needs its key)");
  }
  if (certPresent) {
    bool keyBad = false;
    std::string problem = CheckKeyPair(cfg.clientCertPem, cfg.clientKeyPem, &keyBad);
    if (!problem.empty()) return Invalid(usWhere + "." + (keyBad ? keyField : certField), problem);
  }
  if (Status s = ScalarField(us->second.node, "token", usWhere, &cfg.bearerToken); !s.ok()) {
    return s;
  }
  std::string tokenFile;
  if (Status s = ScalarField(us->second.node, "tokenFile", usWhere, &tokenFile); !s.ok()) return s;
  if (!tokenFile.empty()) {
    cfg.bearerTokenFile = Resolve(us->second.file, tokenFile);
    auto t = ReadFile(cfg.bearerTokenFile);
    if (!t.ok()) return Invalid(usWhere + ".tokenFile", t.status().message());
  }
  return cfg;
}

}  // namespace

std::string RestConfig::Describe() const {
  std::string auth;
  if (!clientCertPem.empty()) auth += "client certificate";
  if (!bearerTokenFile.empty()) {
    auth += (auth.empty() ? "" : ", ") + std::string("token file ") + bearerTokenFile;
  } else if (!bearerToken.empty()) {
    auth += (auth.empty() ? "" : ", ") + std::string("bearer token");
  }
  if (auth.empty()) auth = "anonymous";
  return server + " (" + source + "; " + auth + (insecureSkipTlsVerify ? "; INSECURE TLS" : "") +
         ")";
}

bool Base64Decode(std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  int pad = 0;
  std::size_t chars = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else if (c == '=') {
      ++pad;
      continue;
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    } else {
      return false;
    }
    if (pad > 0) return false;  // data after padding
    ++chars;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (chars % 4 == 1 || pad > 2) return false;
  if (pad > 0 && (chars + static_cast<std::size_t>(pad)) % 4 != 0) return false;
  return !in.empty();
}

std::string Base64Encode(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 0x3F]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 0x3F]);
  while (out.size() % 4 != 0) out.push_back('=');
  return out;
}

StatusOr<RestConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                         const ConfigLoadOptions& options) {
  Merged m;
  for (const auto& p : paths) {
    if (p.empty()) continue;
    if (Status s = MergeFile(p, /*mustExist=*/paths.size() == 1, &m); !s.ok()) return s;
  }
  if (m.files.empty()) {
    std::string list;
    for (const auto& p : paths) list += (list.empty() ? "" : ":") + p;
    return Status(StatusCode::kInvalidArgument, "kubeconfig " + list + ": no such file");
  }
  return Build(m, options);
}

StatusOr<RestConfig> LoadKubeconfigFile(const std::string& path, const ConfigLoadOptions& options) {
  return LoadKubeconfigFiles({path}, options);
}

StatusOr<RestConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                     const ConfigLoadOptions& options) {
  Merged m;
  if (Status s = MergeText(text, path, &m); !s.ok()) return s;
  return Build(m, options);
}

StatusOr<RestConfig> LoadInClusterConfig(const ConfigLoadOptions& options) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return Status(StatusCode::kFailedPrecondition,
                  "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
                  "set (not running in a pod?)");
  }
  RestConfig cfg;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  cfg.server = "https://" + h + ":" + port;
  const std::string dir = options.serviceAccountDir;
  cfg.bearerTokenFile = dir + "/token";
  auto token = ReadFile(cfg.bearerTokenFile);
  if (!token.ok()) {
    return Status(StatusCode::kFailedPrecondition,
                  "in-cluster config: token: " + token.status().message());
  }
  auto ca = ReadFile(dir + "/ca.crt");
  if (!ca.ok()) {
    return Status(StatusCode::kFailedPrecondition,
                  "in-cluster config: ca.crt: " + ca.status().message());
  }
  if (CountCertificates(*ca) == 0) {
    return Status(StatusCode::kInvalidArgument,
                  "in-cluster config: " + dir + "/ca.crt contains no PEM certificate");
  }
  cfg.caPem = std::move(*ca);
  if (auto ns = ReadFile(dir + "/namespace"); ns.ok()) {
    cfg.namespace_ = *ns;
    while (!cfg.namespace_.empty() &&
           (cfg.namespace_.back() == '\n' || cfg.namespace_.back() == ' ')) {
      cfg.namespace_.pop_back();
    }
  }
  cfg.source = "in-cluster ServiceAccount (" + dir + ")";
  return cfg;
}

StatusOr<RestConfig> LoadConfig(const ConfigLoadOptions& options) {
  if (!options.kubeconfigPath.empty()) return LoadKubeconfigFile(options.kubeconfigPath, options);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::vector<std::string> paths;
    std::string_view rest = env;
    while (!rest.empty()) {
      auto colon = rest.find(':');
      paths.emplace_back(rest.substr(0, colon));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
    return LoadKubeconfigFiles(paths, options);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    std::string path = std::string(home) + "/.kube/config";
    std::error_code ec;
    if (fs::exists(path, ec)) return LoadKubeconfigFile(path, options);
  }
  if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) return LoadInClusterConfig(options);
  return Status(StatusCode::kFailedPrecondition,
                "no Kubernetes configuration: no kubeconfig path given, $KUBECONFIG is not set, "
                "~/.kube/config does not exist, and not running in a cluster "
                "(KUBERNETES_SERVICE_HOST is not set)");
}

}  // namespace ayatori::kube

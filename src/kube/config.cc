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

#include "base/base64.h"

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
    RETURN_IF_ERROR(ScalarField(item, "name", at, &name));
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
    RETURN_IF_ERROR(ScalarField(doc, "kind", "kubeconfig " + path + ":", &kind));
    if (!kind.empty() && kind != "Config") {
      return Invalid("kubeconfig " + path + ": kind", "is " + Quote(kind) + ", expected Config");
    }
    std::string current;
    RETURN_IF_ERROR(ScalarField(doc, "current-context", "kubeconfig " + path + ":", &current));
    if (m->currentContext.empty() && !current.empty()) {
      m->currentContext = current;
      m->currentContextFile = path;
    }
    RETURN_IF_ERROR(CollectNamed(doc, "clusters", "cluster", path, &m->clusters));
    RETURN_IF_ERROR(CollectNamed(doc, "users", "user", path, &m->users));
    RETURN_IF_ERROR(CollectNamed(doc, "contexts", "context", path, &m->contexts));
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
  RETURN_IF_ERROR(ScalarField(e.node, dataKey, where, &data));
  RETURN_IF_ERROR(ScalarField(e.node, fileKey, where, &file));
  *present = !data.empty() || !file.empty();
  if (!data.empty()) {
    auto decoded = base::Base64Decode(data);
    if (!decoded.ok()) return Invalid(where + "." + dataKey, decoded.status().message());
    *out = std::move(*decoded);
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

// The context's name: --context, else current-context.
StatusOr<std::string> ContextName(const Merged& m, const ConfigLoadOptions& options,
                                  const std::string& kc) {
  if (!options.context.empty()) return options.context;
  if (m.currentContext.empty()) {
    return Invalid(kc + ": current-context",
                   "is not set and no context was named (use a --context flag or "
                   "`kubectl config use-context`)");
  }
  return m.currentContext;
}

// The named context's entry, or an error listing the contexts there are.
StatusOr<const Entry*> FindContext(const Merged& m, const ConfigLoadOptions& options,
                                   const std::string& kc, const std::string& ctxName) {
  auto ctx = m.contexts.find(ctxName);
  if (ctx != m.contexts.end()) return &ctx->second;
  std::string known;
  for (const auto& [name, _] : m.contexts) known += (known.empty() ? "" : ", ") + name;
  return Invalid(kc + ": " + (options.context.empty() ? "current-context" : "context"),
                 "names context " + Quote(ctxName) + ", which is not in contexts[] (known: " +
                     (known.empty() ? "none" : known) + ")");
}

// What a context names.
struct ContextRefs {
  std::string cluster, user;
};

// Reads the context's cluster, user and namespace (into cfg.namespace_).
StatusOr<ContextRefs> ReadContext(const Entry& ctx, const std::string& ctxWhere, RestConfig* cfg) {
  if (!ctx.node.IsDefined() || !ctx.node.IsMap()) return Invalid(ctxWhere, "is missing");
  ContextRefs refs;
  RETURN_IF_ERROR(ScalarField(ctx.node, "cluster", ctxWhere, &refs.cluster));
  RETURN_IF_ERROR(ScalarField(ctx.node, "user", ctxWhere, &refs.user));
  RETURN_IF_ERROR(ScalarField(ctx.node, "namespace", ctxWhere, &cfg->namespace_));
  if (refs.cluster.empty()) return Invalid(ctxWhere + ".cluster", "is missing");
  return refs;
}

// The cluster's server URL (without trailing slashes), tls-server-name and proxy-url.
Status ReadServer(const Entry& cl, const std::string& clWhere, RestConfig* cfg) {
  RETURN_IF_ERROR(ScalarField(cl.node, "server", clWhere, &cfg->server));
  if (cfg->server.empty()) return Invalid(clWhere + ".server", "is missing");
  if (cfg->server.rfind("https://", 0) != 0 && cfg->server.rfind("http://", 0) != 0) {
    return Invalid(clWhere + ".server", Quote(cfg->server) + " is not an http:// or https:// URL");
  }
  while (!cfg->server.empty() && cfg->server.back() == '/') cfg->server.pop_back();
  RETURN_IF_ERROR(ScalarField(cl.node, "tls-server-name", clWhere, &cfg->tlsServerName));
  if (cfg->tlsServerName.find_first_of(":/@ ") != std::string::npos) {
    return Invalid(clWhere + ".tls-server-name", Quote(cfg->tlsServerName) + " is not a host name");
  }
  RETURN_IF_ERROR(ScalarField(cl.node, "proxy-url", clWhere, &cfg->proxyUrl));
  if (!cfg->proxyUrl.empty()) {
    bool known = false;
    for (const char* scheme : {"http://", "https://", "socks5://", "socks5h://"}) {
      known = known || cfg->proxyUrl.rfind(scheme, 0) == 0;
    }
    if (!known) {
      return Invalid(
          clWhere + ".proxy-url",
          "must be an http://, https://, socks5:// or socks5h:// URL (the scheme is missing or "
          "not supported)");
    }
  }
  return Status::Ok();
}

// How the server's certificate is verified: a CA, or insecure-skip-tls-verify when allowed (and
// never with a CA).
Status ReadServerTrust(const Entry& cl, const std::string& clWhere,
                       const ConfigLoadOptions& options, RestConfig* cfg) {
  bool caPresent = false;
  RETURN_IF_ERROR(DataOrFile(cl, clWhere, "certificate-authority", "certificate-authority-data",
                             &cfg->caPem, &caPresent));
  if (caPresent && CountCertificates(cfg->caPem) == 0) {
    return Invalid(
        clWhere + "." +
            (cl.node["certificate-authority-data"].IsDefined() ? "certificate-authority-data"
                                                               : "certificate-authority"),
        "contains no PEM certificate");
  }
  if (Status s =
          BoolField(cl.node, "insecure-skip-tls-verify", clWhere, &cfg->insecureSkipTlsVerify);
      !s.ok()) {
    return s;
  }
  if (!cfg->insecureSkipTlsVerify) return Status::Ok();
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
  return Status::Ok();
}

// The cluster a context names: its server and how it is trusted.
Status ReadCluster(const Merged& m, const std::string& clusterName, const std::string& ctxWhere,
                   const ConfigLoadOptions& options, RestConfig* cfg) {
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
  RETURN_IF_ERROR(ReadServer(cl->second, clWhere, cfg));
  return ReadServerTrust(cl->second, clWhere, options, cfg);
}

// A client certificate and its key: both or neither, and a pair that matches.
Status ReadClientCertificate(const Entry& us, const std::string& usWhere, RestConfig* cfg) {
  bool certPresent = false, keyPresent = false;
  RETURN_IF_ERROR(DataOrFile(us, usWhere, "client-certificate", "client-certificate-data",
                             &cfg->clientCertPem, &certPresent));
  if (Status s =
          DataOrFile(us, usWhere, "client-key", "client-key-data", &cfg->clientKeyPem, &keyPresent);
      !s.ok()) {
    return s;
  }
  const char* certField = us.node["client-certificate-data"].IsDefined() ? "client-certificate-data"
                                                                         : "client-certificate";
  const char* keyField = us.node["client-key-data"].IsDefined() ? "client-key-data" : "client-key";
  if (certPresent != keyPresent) {
    return Invalid(usWhere + "." + (certPresent ? keyField : certField),
                   "is missing (a client certificate needs its key)");
  }
  if (certPresent) {
    bool keyBad = false;
    std::string problem = CheckKeyPair(cfg->clientCertPem, cfg->clientKeyPem, &keyBad);
    if (!problem.empty()) return Invalid(usWhere + "." + (keyBad ? keyField : certField), problem);
  }
  return Status::Ok();
}

// A bearer token, inline or in a file (read now, to fail early; re-read by the client).
Status ReadToken(const Entry& us, const std::string& usWhere, RestConfig* cfg) {
  RETURN_IF_ERROR(ScalarField(us.node, "token", usWhere, &cfg->bearerToken));
  std::string tokenFile;
  RETURN_IF_ERROR(ScalarField(us.node, "tokenFile", usWhere, &tokenFile));
  if (!tokenFile.empty()) {
    cfg->bearerTokenFile = Resolve(us.file, tokenFile);
    auto t = ReadFile(cfg->bearerTokenFile);
    if (!t.ok()) return Invalid(usWhere + ".tokenFile", t.status().message());
  }
  return Status::Ok();
}

// What an auth-provider user should use instead: the exec plugins that replaced the providers
// client-go removed (1.26).
std::string AuthProviderReplacement(const std::string& name) {
  if (name == "gcp") {
    return "gke-gcloud-auth-plugin (`gcloud components install gke-gcloud-auth-plugin`, then "
           "`gcloud container clusters get-credentials`)";
  }
  if (name == "azure") {
    return "kubelogin (`az aks install-cli`, then `kubelogin convert-kubeconfig -l azurecli`)";
  }
  if (name == "oidc") {
    return "an OIDC exec plugin such as kubelogin (`kubectl oidc-login`, "
           "https://github.com/int128/kubelogin)";
  }
  return "the exec credential plugin your provider documents";
}

StatusOr<ExecInteractiveMode> ParseInteractiveMode(const std::string& v, bool v1,
                                                   const std::string& where) {
  if (v == "Never") return ExecInteractiveMode::kNever;
  if (v == "IfAvailable") return ExecInteractiveMode::kIfAvailable;
  if (v == "Always") return ExecInteractiveMode::kAlways;
  if (v.empty() && !v1) return ExecInteractiveMode::kIfAvailable;  // v1beta1's default
  if (v.empty()) return Invalid(where, "is missing (client.authentication.k8s.io/v1 requires it)");
  return Invalid(where, Quote(v) + " is not Never, IfAvailable or Always");
}

// users[].user.exec: the plugin, run by the client before requests (not here).
Status ReadExec(const Entry& us, const std::string& usWhere, const std::string& userName,
                RestConfig* cfg) {
  const std::string where = usWhere + ".exec";
  YAML::Node ex = us.node["exec"];
  if (!ex.IsMap()) return Invalid(where, "must be a mapping");
  ExecConfig ec;
  ec.user = userName;
  RETURN_IF_ERROR(ScalarField(ex, "apiVersion", where, &ec.apiVersion));
  if (ec.apiVersion != "client.authentication.k8s.io/v1" &&
      ec.apiVersion != "client.authentication.k8s.io/v1beta1") {
    return Invalid(where + ".apiVersion",
                   Quote(ec.apiVersion) +
                       " is not client.authentication.k8s.io/v1 or client.authentication.k8s.io/"
                       "v1beta1");
  }
  RETURN_IF_ERROR(ScalarField(ex, "command", where, &ec.command));
  if (ec.command.empty()) return Invalid(where + ".command", "is missing");
  // client-go: a relative path with a slash is relative to the kubeconfig's folder.
  if (ec.command.find('/') != std::string::npos) ec.command = Resolve(us.file, ec.command);
  YAML::Node args = ex["args"];
  if (args.IsDefined() && !args.IsNull()) {
    if (!args.IsSequence()) return Invalid(where + ".args", "must be a list of strings");
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (!args[i].IsScalar()) {
        return Invalid(where + ".args[" + std::to_string(i) + "]", "must be a string");
      }
      ec.args.push_back(args[i].Scalar());
    }
  }
  YAML::Node env = ex["env"];
  if (env.IsDefined() && !env.IsNull()) {
    if (!env.IsSequence()) return Invalid(where + ".env", "must be a list of {name, value}");
    for (std::size_t i = 0; i < env.size(); ++i) {
      const std::string at = where + ".env[" + std::to_string(i) + "]";
      if (!env[i].IsMap()) return Invalid(at, "must be a mapping with name and value");
      std::string name, value;
      RETURN_IF_ERROR(ScalarField(env[i], "name", at, &name));
      RETURN_IF_ERROR(ScalarField(env[i], "value", at, &value));
      if (name.empty() || name.find('=') != std::string::npos) {
        return Invalid(at + ".name", "must be a non-empty name without '='");
      }
      ec.env.emplace_back(name, value);
    }
  }
  RETURN_IF_ERROR(ScalarField(ex, "installHint", where, &ec.installHint));
  RETURN_IF_ERROR(BoolField(ex, "provideClusterInfo", where, &ec.provideClusterInfo));
  std::string mode;
  RETURN_IF_ERROR(ScalarField(ex, "interactiveMode", where, &mode));
  auto parsed = ParseInteractiveMode(mode, ec.apiVersion == "client.authentication.k8s.io/v1",
                                     where + ".interactiveMode");
  if (!parsed.ok()) return parsed.status();
  ec.interactiveMode = *parsed;
  ec.server = cfg->server;
  ec.caPem = cfg->caPem;
  ec.tlsServerName = cfg->tlsServerName;
  ec.proxyUrl = cfg->proxyUrl;
  ec.insecureSkipTlsVerify = cfg->insecureSkipTlsVerify;
  cfg->exec = std::make_shared<ExecCredentialProvider>(std::move(ec));
  return Status::Ok();
}

// The user a context names (none: anonymous): a client certificate, a token and/or an exec
// plugin; auth providers (removed from client-go) and basic auth are refused.
Status ReadUser(const Merged& m, const std::string& userName, const std::string& ctxWhere,
                RestConfig* cfg) {
  if (userName.empty()) return Status::Ok();  // anonymous
  auto us = m.users.find(userName);
  if (us == m.users.end()) {
    return Invalid(ctxWhere + ".user",
                   "names user " + Quote(userName) + ", which is not in users[]");
  }
  const std::string usWhere =
      "kubeconfig " + us->second.file + ": users[" + Quote(userName) + "].user";
  if (!us->second.node.IsDefined() || us->second.node.IsNull()) return Status::Ok();
  if (YAML::Node ap = us->second.node["auth-provider"]; ap.IsDefined()) {
    std::string name;
    if (ap.IsMap()) RETURN_IF_ERROR(ScalarField(ap, "name", usWhere + ".auth-provider", &name));
    return Invalid(usWhere + ".auth-provider",
                   "user " + Quote(userName) + " uses the " +
                       (name.empty() ? "unnamed" : Quote(name)) +
                       " auth provider, which kubectl and this client no longer support; switch "
                       "the user to its exec credential plugin: " +
                       AuthProviderReplacement(name));
  }
  for (const char* unsupported : {"username", "password"}) {
    if (us->second.node[unsupported].IsDefined()) {
      return Invalid(usWhere + "." + unsupported,
                     "is not supported by this client (basic auth); use a token, tokenFile, a "
                     "client certificate or an exec plugin");
    }
  }
  RETURN_IF_ERROR(ReadClientCertificate(us->second, usWhere, cfg));
  RETURN_IF_ERROR(ReadToken(us->second, usWhere, cfg));
  if (us->second.node["exec"].IsDefined()) return ReadExec(us->second, usWhere, userName, cfg);
  return Status::Ok();
}

StatusOr<RestConfig> Build(const Merged& m, const ConfigLoadOptions& options) {
  std::string files;
  for (const auto& f : m.files) files += (files.empty() ? "" : ":") + f;
  const std::string kc = "kubeconfig " + files;
  auto ctxName = ContextName(m, options, kc);
  if (!ctxName.ok()) return ctxName.status();
  auto ctx = FindContext(m, options, kc, *ctxName);
  if (!ctx.ok()) return ctx.status();
  const std::string ctxWhere =
      "kubeconfig " + (*ctx)->file + ": contexts[" + Quote(*ctxName) + "].context";
  RestConfig cfg;
  auto refs = ReadContext(**ctx, ctxWhere, &cfg);
  if (!refs.ok()) return refs.status();
  RETURN_IF_ERROR(ReadCluster(m, refs->cluster, ctxWhere, options, &cfg));
  cfg.source = "kubeconfig " + files + " context " + *ctxName;
  RETURN_IF_ERROR(ReadUser(m, refs->user, ctxWhere, &cfg));
  return cfg;
}

// A proxy URL without its user:password@ part (a secret).
std::string WithoutUserinfo(const std::string& url) {
  auto scheme = url.find("://");
  auto at = url.find('@');
  if (scheme == std::string::npos || at == std::string::npos) return url;
  return url.substr(0, scheme + 3) + "***@" + url.substr(at + 1);
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
  if (exec) {
    auth += (auth.empty() ? "" : ", ") + std::string("exec plugin ") + exec->config().command;
  }
  if (auth.empty()) auth = "anonymous";
  return server + " (" + source + "; " + auth +
         (tlsServerName.empty() ? "" : "; TLS server name " + tlsServerName) +
         (proxyUrl.empty() ? "" : "; proxy " + WithoutUserinfo(proxyUrl)) +
         (insecureSkipTlsVerify ? "; INSECURE TLS" : "") + ")";
}

StatusOr<RestConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                         const ConfigLoadOptions& options) {
  Merged m;
  for (const auto& p : paths) {
    if (p.empty()) continue;
    RETURN_IF_ERROR(MergeFile(p, /*mustExist=*/paths.size() == 1, &m));
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
  RETURN_IF_ERROR(MergeText(text, path, &m));
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

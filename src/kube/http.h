// The REST client's HTTP: the project's one stack (http/http.h) under the names the kube library
// and its users have always used, and the libcurl transport built from a RestConfig.
#pragma once

#include <memory>

#include "http/http.h"
#include "kube/config.h"

namespace ayatori::kube {

using HttpRequest = http::Request;
using HttpResponse = http::Response;
using HttpTransport = http::Transport;
using CurlTransportOptions = http::CurlOptions;

// http::NewCurlTransport with the config's TLS: verification uses only config.caPem when it is
// set (not the system store); the client certificate and key when given (from the config, else
// asked once of its exec plugin); the config's proxy-url and tls-server-name.
std::unique_ptr<HttpTransport> NewCurlTransport(const RestConfig& config,
                                                const CurlTransportOptions& options);

}  // namespace ayatori::kube

// Percent-encoding (RFC 3986 section 2.1) of one URL path segment or one query value: the one
// escaper of the project, for the Kubernetes API paths, the Docker Engine API and the OpenSandbox
// APIs.
//
// One function serves both places: it keeps only the unreserved characters (A-Z a-z 0-9 - . _ ~,
// section 2.3) and encodes every other byte as %XX (upper-case hex), so '/', '?', '&', '=', '+',
// '#' and space can never end a segment or a value early. That is stricter than a path segment
// needs (Go's url.PathEscape keeps ':' '@' '&' '=' '+' '$') and than a query value needs, and
// every server reads both forms alike; it is what libcurl's curl_easy_escape does.
#pragma once

#include <string>
#include <string_view>

namespace ayatori::base {

std::string PercentEncode(std::string_view text);

}  // namespace ayatori::base

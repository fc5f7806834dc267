// Base64 (RFC 4648 section 4, the standard alphabet; section 5, the URL-safe one, for encoding
// only): the one codec of the project, for Kubernetes Secret data, kubeconfig `*-data` fields,
// .dockerconfigjson `auth` values and the X-Registry-Auth header. OpenSSL does the bit work
// (EVP_EncodeBlock / EVP_DecodeBlock); the rules below are checked here, because EVP_DecodeBlock
// reads '=' anywhere as zero bits and always returns whole 3-byte groups.
//
// What Base64Decode accepts:
//   - the characters A-Z a-z 0-9 + / only (no URL-safe '-' or '_');
//   - whitespace (space, tab, CR, LF) anywhere, skipped: a kubeconfig written by hand or a YAML
//     block scalar folds long values;
//   - padding '=' optional (Secret data is always padded, kubeconfig values written by hand are
//     sometimes not), but when present it must complete the last group of 4 (at most two '=',
//     nothing after them but whitespace);
//   - the empty string, which decodes to the empty string (a Secret key with an empty value);
//   - unused low bits of the last character are ignored, as Go's base64.StdEncoding (which the
//     API server and client-go use) ignores them.
// Anything else is kInvalidArgument whose message names the problem and a byte offset, never the
// text: the input is often a secret.
#pragma once

#include <string>
#include <string_view>

#include "ayatori/status.h"

namespace ayatori::base {

// Standard alphabet, padded.
std::string Base64Encode(std::string_view data);
// URL-safe alphabet ('-' and '_' for '+' and '/'), padded: Docker's X-Registry-Auth header.
std::string Base64UrlEncode(std::string_view data);

StatusOr<std::string> Base64Decode(std::string_view text);

}  // namespace ayatori::base

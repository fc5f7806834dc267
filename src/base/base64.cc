#include "base/base64.h"

#include <openssl/evp.h>

#include <climits>
#include <cstddef>

namespace ayatori::base {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool InAlphabet(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

Status Bad(const std::string& why) {
  return Status(StatusCode::kInvalidArgument, "not valid base64: " + why);
}

}  // namespace

std::string Base64Encode(std::string_view data) {
  // EVP_EncodeBlock takes an int length; split larger inputs at a multiple of 3 bytes, where the
  // encoding of the parts concatenates to the encoding of the whole.
  constexpr std::size_t kChunk = std::size_t{3} << 28;
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  while (!data.empty()) {
    std::string_view part = data.substr(0, kChunk);
    data.remove_prefix(part.size());
    const std::size_t at = out.size();
    out.resize(at + (part.size() + 2) / 3 * 4 + 1);  // + the NUL EVP_EncodeBlock writes
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data() + at),
                                  reinterpret_cast<const unsigned char*>(part.data()),
                                  static_cast<int>(part.size()));
    out.resize(at + static_cast<std::size_t>(n));
  }
  return out;
}

std::string Base64UrlEncode(std::string_view data) {
  std::string out = Base64Encode(data);
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

StatusOr<std::string> Base64Decode(std::string_view text) {
  // The characters of the encoding without whitespace, checked; then completed with '=' to a
  // multiple of 4, which is what EVP_DecodeBlock accepts.
  std::string chars;
  chars.reserve(text.size() + 3);
  std::size_t pad = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (IsSpace(c)) continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (!InAlphabet(c)) {
      return Bad("byte " + std::to_string(i) +
                 " is not in the standard alphabet (A-Z, a-z, 0-9, +, /, = and whitespace)");
    }
    if (pad > 0) return Bad("data after the '=' padding at byte " + std::to_string(i));
    chars.push_back(c);
  }
  const std::size_t tail = chars.size() % 4;  // characters in the last, incomplete group
  if (tail == 1) {
    return Bad(std::to_string(chars.size()) +
               " characters leave 1 in the last group of 4, which holds no whole byte");
  }
  if (pad > 0 && (tail == 0 || tail + pad != 4)) {
    return Bad(std::to_string(pad) + " '=' do not complete the last group of 4 (" +
               std::to_string(chars.size()) + " characters before them)");
  }
  if (chars.size() > static_cast<std::size_t>(INT_MAX) - 3) return Bad("input too long");
  const std::size_t missing = tail == 0 ? 0 : 4 - tail;
  chars.append(missing, '=');
  std::string out(chars.size() / 4 * 3, '\0');
  if (chars.empty()) return out;
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(chars.data()),
                                static_cast<int>(chars.size()));
  if (n < 0 || static_cast<std::size_t>(n) != out.size()) return Bad("OpenSSL rejected it");
  // EVP_DecodeBlock decodes each '=' as zero bits and keeps the bytes they make: one per '='.
  out.resize(out.size() - missing);
  return out;
}

}  // namespace ayatori::base

// What the fuzz targets share: FUZZ_CHECK, an invariant whose failure is a finding (it aborts, so
// libFuzzer saves the input), and feeding a stream decoder in pieces.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string_view>

// Unlike assert(), also active in builds with NDEBUG.
#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace ayatori::fuzz {

// Hands `bytes` to feed(piece) in pieces of `size` bytes (the last may be shorter), stopping
// when feed returns false. A stream decoder must give the same result however its input is cut.
template <class Feed>
void FeedInPieces(std::string_view bytes, size_t size, Feed&& feed) {
  for (size_t at = 0; at < bytes.size(); at += size) {
    if (!feed(bytes.substr(at, size))) return;
  }
}

}  // namespace ayatori::fuzz

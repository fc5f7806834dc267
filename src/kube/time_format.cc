#include "kube/time_format.h"

#include <cstdio>

namespace ayatori::kube {
namespace {

std::string Format(std::chrono::system_clock::time_point t, bool micros) {
  using namespace std::chrono;
  auto us = time_point_cast<microseconds>(t);
  auto days = floor<std::chrono::days>(us);
  year_month_day ymd{days};
  hh_mm_ss hms{us - days};
  char buf[40];
  if (micros) {
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%06dZ", int(ymd.year()),
                  unsigned(ymd.month()), unsigned(ymd.day()), int(hms.hours().count()),
                  int(hms.minutes().count()), int(hms.seconds().count()),
                  int(hms.subseconds().count()));
  } else {
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", int(ymd.year()),
                  unsigned(ymd.month()), unsigned(ymd.day()), int(hms.hours().count()),
                  int(hms.minutes().count()), int(hms.seconds().count()));
  }
  return buf;
}

}  // namespace

std::string FormatTime(std::chrono::system_clock::time_point t) { return Format(t, false); }
std::string FormatMicroTime(std::chrono::system_clock::time_point t) { return Format(t, true); }

}  // namespace ayatori::kube

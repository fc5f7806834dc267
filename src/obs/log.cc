#include "obs/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>

namespace ayatori::obs {
namespace {

struct LogConfig {
  std::mutex mu;
  LogLevel level = LogLevel::kInfo;
  LogFormat format = LogFormat::kJson;
  std::ostream* out = &std::cerr;
};

LogConfig& Config() {
  static LogConfig config;
  return config;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::string Timestamp() {
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03dZ", static_cast<int>(ms));
  return buf;
}

}  // namespace

bool ParseLogLevel(std::string_view s, LogLevel* out) {
  for (auto l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (s == LevelName(l)) {
      *out = l;
      return true;
    }
  }
  return false;
}

bool ParseLogFormat(std::string_view s, LogFormat* out) {
  if (s == "json") {
    *out = LogFormat::kJson;
    return true;
  }
  if (s == "text") {
    *out = LogFormat::kText;
    return true;
  }
  return false;
}

void ConfigureLogging(LogLevel level, LogFormat format, std::ostream* out) {
  auto& c = Config();
  std::lock_guard lock(c.mu);
  c.level = level;
  c.format = format;
  if (out != nullptr) c.out = out;
}

bool LogEnabled(LogLevel level) {
  auto& c = Config();
  std::lock_guard lock(c.mu);
  return level >= c.level;
}

void Log(LogLevel level, std::string_view msg, const LogFields& fields) {
  auto& c = Config();
  std::lock_guard lock(c.mu);
  if (level < c.level) return;
  if (c.format == LogFormat::kJson) {
    nlohmann::json j;
    j["ts"] = Timestamp();
    j["level"] = LevelName(level);
    j["msg"] = std::string(msg);
    for (const auto& f : fields) {
      std::visit([&](const auto& v) { j[f.key] = v; }, f.value);
    }
    *c.out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    *c.out << Timestamp() << " " << LevelName(level) << " " << msg;
    for (const auto& f : fields) {
      *c.out << " " << f.key << "=";
      std::visit([&](const auto& v) { *c.out << nlohmann::json(v).dump(); }, f.value);
    }
    *c.out << "\n";
  }
  c.out->flush();
}

}  // namespace ayatori::obs

// Structured logs: one JSON object per line (or logfmt-like text) with a level, a message and
// fields such as the Job's namespace, name and uid. Callers never pass Secret values: fields are
// names and identifiers, not request bodies.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ayatori::obs {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat { kJson, kText };

// Parses "debug|info|warn|error" / "json|text"; false on anything else.
bool ParseLogLevel(std::string_view s, LogLevel* out);
bool ParseLogFormat(std::string_view s, LogFormat* out);

struct LogField {
  LogField(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
  LogField(std::string k, const char* v) : key(std::move(k)), value(std::string(v)) {}
  LogField(std::string k, int64_t v) : key(std::move(k)), value(v) {}
  LogField(std::string k, int v) : key(std::move(k)), value(static_cast<int64_t>(v)) {}
  LogField(std::string k, double v) : key(std::move(k)), value(v) {}
  std::string key;
  std::variant<std::string, int64_t, double> value;
};
using LogFields = std::vector<LogField>;

// Process-wide configuration; defaults: info, json, stderr.
void ConfigureLogging(LogLevel level, LogFormat format, std::ostream* out = nullptr);
bool LogEnabled(LogLevel level);
void Log(LogLevel level, std::string_view msg, const LogFields& fields = {});

inline void Debug(std::string_view msg, const LogFields& f = {}) { Log(LogLevel::kDebug, msg, f); }
inline void Info(std::string_view msg, const LogFields& f = {}) { Log(LogLevel::kInfo, msg, f); }
inline void Warn(std::string_view msg, const LogFields& f = {}) { Log(LogLevel::kWarn, msg, f); }
inline void Error(std::string_view msg, const LogFields& f = {}) { Log(LogLevel::kError, msg, f); }

}  // namespace ayatori::obs

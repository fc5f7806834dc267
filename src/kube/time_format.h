// RFC 3339 timestamps as the API writes them: metav1.Time ("2026-01-02T03:04:05Z") and
// metav1.MicroTime ("2026-01-02T03:04:05.123456Z"); base::ParseTime reads both.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ayatori::kube {

std::string FormatTime(std::chrono::system_clock::time_point t);
std::string FormatMicroTime(std::chrono::system_clock::time_point t);

}  // namespace ayatori::kube

#pragma once
// Stub of the two rclcpp names nebula's decoder headers use (logging only).
#include <string>
namespace rclcpp {
struct Logger {
  enum class Level { Debug, Info, Warn, Error, Fatal };
  void set_level(Level) {}
};
inline Logger get_logger(const std::string &) { return {}; }
}  // namespace rclcpp
#define RCLCPP_DEBUG(...) (void)0
#define RCLCPP_INFO(...) (void)0
#define RCLCPP_WARN(...) (void)0
#define RCLCPP_ERROR(...) (void)0
#define RCLCPP_DEBUG_STREAM(...) (void)0
#define RCLCPP_INFO_STREAM(...) (void)0
#define RCLCPP_WARN_STREAM(...) (void)0
#define RCLCPP_ERROR_STREAM(...) (void)0

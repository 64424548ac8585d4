#pragma once
// Stub: nebula's string_conversions.hpp names nlohmann JSON types; the decoder never calls them.
#include <string>
namespace nlohmann {
struct ordered_json {
  ordered_json() = default;
  template <typename T> explicit ordered_json(const T &) {}
  bool is_string() const { return false; }
  template <typename T> T get() const { return T{}; }
  std::string dump(int = -1) const { return "{}"; }
};
struct json {
  bool is_string() const { return false; }
  template <typename T> T get() const { return T{}; }
  std::string dump(int = -1) const { return "{}"; }
};
}  // namespace nlohmann

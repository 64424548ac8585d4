#pragma once
// Stub: the downsample mask is an optional nebula filter, off in this harness (no mask path).
#include <cstddef>
#include <functional>
namespace nebula::drivers::point_filters {
using DitherTransform = std::function<size_t(size_t x, size_t y)>;
inline const DitherTransform g_default_dither_transform = [](size_t x, size_t y) { return x + y; };
struct DownsampleMaskFilter {
  template <typename... A> explicit DownsampleMaskFilter(A &&...) {}
  template <typename P> bool excluded(const P &) const { return false; }
};
}  // namespace nebula::drivers::point_filters

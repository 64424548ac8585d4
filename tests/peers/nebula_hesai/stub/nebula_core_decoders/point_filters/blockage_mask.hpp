#pragma once
// Stub: the blockage mask is an optional nebula filter, off in this harness (no plugin given).
#include <cstdint>
#include <memory>
namespace nebula::drivers::point_filters {
enum class BlockageState { NO_BLOCKAGE, BLOCKAGE, UNSURE };
struct BlockageMask {
  template <typename... A> explicit BlockageMask(A &&...) {}
  void update(float, uint32_t, BlockageState) {}
};
struct BlockageMaskPlugin {
  double get_bin_width_mdeg() const { return 100; }
  void callback_and_reset(BlockageMask &, double) {}
};
}  // namespace nebula::drivers::point_filters

// Test-only peer: tier4/nebula's own HesaiDecoder (its headers under include/, unchanged) run
// over packets given on stdin; every scan it completes is written to stdout.
//
//   harness MODEL ANGLES CUT FOV_MIN FOV_MAX MIN_RANGE MAX_RANGE THRESHOLD < packets
//
// MODEL: at128 (ANGLES: the .dat correction file) or ot128 (ANGLES: the angle CSV).
// stdin: repeated (u32 length, bytes). stdout: per scan: f64 scan stamp (s), u32 n, then n
// records of x, y, z (f32), intensity (u8), channel (u16), return_type (u8), time_stamp (u32).
// Built by nebula_peer.py with the stubs in stub/ (rclcpp logging, nlohmann names, the optional
// mask filters: none is used with this configuration). Never shipped.
#include "nebula_hesai_decoders/decoders/hesai_decoder.hpp"
#include "nebula_hesai_decoders/decoders/pandar_128e4x.hpp"
#include "nebula_hesai_decoders/decoders/pandar_at128.hpp"

#include <nebula_core_common/loggers/console_logger.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

using nebula::drivers::HesaiCalibrationConfiguration;
using nebula::drivers::HesaiCorrection;
using nebula::drivers::HesaiDecoder;
using nebula::drivers::HesaiScanDecoder;
using nebula::drivers::HesaiSensorConfiguration;
using nebula::drivers::NebulaPointCloudPtr;
using nebula::drivers::SensorModel;

static void write_scan(const NebulaPointCloudPtr & cloud, double stamp_s)
{
  uint32_t n = cloud->size();
  std::fwrite(&stamp_s, 8, 1, stdout);
  std::fwrite(&n, 4, 1, stdout);
  for (const auto & p : *cloud) {
    std::fwrite(&p.x, 4, 1, stdout);
    std::fwrite(&p.y, 4, 1, stdout);
    std::fwrite(&p.z, 4, 1, stdout);
    std::fwrite(&p.intensity, 1, 1, stdout);
    std::fwrite(&p.channel, 2, 1, stdout);
    std::fwrite(&p.return_type, 1, 1, stdout);
    std::fwrite(&p.time_stamp, 4, 1, stdout);
  }
}

int main(int argc, char ** argv)
{
  if (argc != 9) {
    std::fprintf(stderr, "usage: %s at128|ot128 angles cut fov_min fov_max min max thr\n", argv[0]);
    return 2;
  }
  bool at128 = std::strcmp(argv[1], "at128") == 0;
  auto config = std::make_shared<HesaiSensorConfiguration>();
  config->sensor_model = at128 ? SensorModel::HESAI_PANDARAT128 : SensorModel::HESAI_PANDAR128_E4X;
  config->cut_angle = std::atof(argv[3]);
  config->cloud_min_angle = std::atoi(argv[4]);
  config->cloud_max_angle = std::atoi(argv[5]);
  config->min_range = std::atof(argv[6]);
  config->max_range = std::atof(argv[7]);
  config->dual_return_distance_threshold = std::atof(argv[8]);
  auto logger = std::make_shared<nebula::drivers::loggers::ConsoleLogger>("peer");
  std::unique_ptr<HesaiScanDecoder> decoder;
  if (at128) {
    auto correction = std::make_shared<HesaiCorrection>();
    if (correction->load_from_file(argv[2]) != nebula::Status::OK) return 2;
    decoder = std::make_unique<HesaiDecoder<nebula::drivers::PandarAT128>>(
      config, correction, logger, nullptr, nullptr, nullptr);
  } else {
    auto calibration = std::make_shared<HesaiCalibrationConfiguration>();
    if (calibration->load_from_file(argv[2]) != nebula::Status::OK) return 2;
    decoder = std::make_unique<HesaiDecoder<nebula::drivers::Pandar128E4X>>(
      config, calibration, logger, nullptr, nullptr, nullptr);
  }
  decoder->set_pointcloud_callback(write_scan);
  uint32_t len = 0;
  while (std::fread(&len, 4, 1, stdin) == 1) {
    std::vector<uint8_t> packet(len);
    if (len && std::fread(packet.data(), 1, len, stdin) != len) return 3;
    decoder->unpack(packet);
  }
  return 0;
}

// An ARS408 CAN frame reader by byte masks, the test reference for hyperframes'
// DBC-based decoder (adapters/radar/ars408.dbc through cantools).
//
// Written for hyperframes' tests (not copied). Each expression reads the bits
// where the two open drivers read them (see PROVENANCE.md in this folder):
//   * objects 0x60A/0x60B/0x60D and RadarState 0x201: tier4/ars408_driver,
//     src/ars408_driver.cpp at 60678fc1 (Apache-2.0);
//   * clusters 0x600/0x701/0x702 and object quality 0x60C: ApolloAuto/apollo,
//     modules/drivers/radar/conti_radar/protocol/*.cc (Apache-2.0).
// Where the two differ from the ARS408 manual's layout (tier4 reads Obj_ProbOfExist
// from the Obj_MeasState bits and Obj_MeasCounter from bytes 0-1; Apollo reads
// Cluster_MeasCounter's low byte from byte 2 again), the manual's layout is used.
//
// Input: lines "ID HEXBYTES" (hex id, payload as hex). Output: one line per frame,
// "key=value" pairs, values as %.17g of the scaled physical value.
#include <cstdint>
#include <cstdio>
#include <cstring>

static void p(const char* k, double v) { std::printf(" %s=%.17g", k, v); }

int main() {
  unsigned id;
  char hex[64];
  while (std::scanf("%x %63s", &id, hex) == 2) {
    uint8_t d[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t n = std::strlen(hex) / 2;
    for (size_t i = 0; i < n && i < 8; i++) std::sscanf(hex + 2 * i, "%2hhx", &d[i]);
    std::printf("0x%X", id);
    switch (id) {
      case 0x600:  // Cluster_0_Status
        p("near", d[0]);
        p("far", d[1]);
        p("counter", (d[2] << 8) | d[3]);
        p("version", (d[4] & 0xF0u) >> 4);
        break;
      case 0x701: {  // Cluster_1_General
        unsigned x = (d[1] << 5u) + ((d[2] & 0xF8u) >> 3u);
        unsigned y = ((d[2] & 0x03u) << 8u) + d[3];
        unsigned vx = (d[4] << 2u) + ((d[5] & 0xC0u) >> 6u);
        unsigned vy = ((d[5] & 0x3Fu) << 3u) + ((d[6] & 0xE0u) >> 5u);
        p("id", d[0]);
        p("x", x * 0.2 - 500.0);
        p("y", y * 0.2 - 102.3);
        p("vx", vx * 0.25 - 128.0);
        p("vy", vy * 0.25 - 64.0);
        p("dyn_prop", d[6] & 0x07u);
        p("rcs", d[7] * 0.5 - 64.0);
      } break;
      case 0x702:  // Cluster_2_Quality
        p("id", d[0]);
        p("x_rms", (d[1] & 0xF8u) >> 3);
        p("y_rms", ((d[1] & 0x07u) << 2) | ((d[2] & 0xC0u) >> 6));
        p("vx_rms", (d[2] & 0x3Eu) >> 1);
        p("vy_rms", ((d[2] & 0x01u) << 4) | ((d[3] & 0xF0u) >> 4));
        p("pdh0", d[3] & 0x07u);
        p("invalid_state", (d[4] & 0xF8u) >> 3);
        p("ambig_state", d[4] & 0x07u);
        break;
      case 0x60A:  // Obj_0_Status
        p("count", d[0]);
        p("counter", (d[1] << 8) | d[2]);
        p("version", (d[3] & 0xF0u) >> 4);
        break;
      case 0x60B: {  // Obj_1_General
        unsigned x = (d[1] << 5u) + ((d[2] & 0xF8u) >> 3u);
        unsigned y = ((d[2] & 0x07u) << 8u) + d[3];
        unsigned vx = (d[4] << 2u) + ((d[5] & 0xC0u) >> 6u);
        unsigned vy = ((d[5] & 0x3Fu) << 3u) + ((d[6] & 0xE0u) >> 5u);
        p("id", d[0]);
        p("x", x * 0.2 - 500.0);
        p("y", y * 0.2 - 204.6);
        p("vx", vx * 0.25 - 128.0);
        p("vy", vy * 0.25 - 64.0);
        p("dyn_prop", d[6] & 0x07u);
        p("rcs", d[7] * 0.5 - 64.0);
      } break;
      case 0x60C:  // Obj_2_Quality
        p("id", d[0]);
        p("x_rms", (d[1] & 0xF8u) >> 3);
        p("y_rms", ((d[1] & 0x07u) << 2) | ((d[2] & 0xC0u) >> 6));
        p("vx_rms", (d[2] & 0x3Eu) >> 1);
        p("vy_rms", ((d[2] & 0x01u) << 4) | ((d[3] & 0xF0u) >> 4));
        p("ax_rms", ((d[3] & 0x0Fu) << 1) | ((d[4] & 0x80u) >> 7));
        p("ay_rms", (d[4] & 0x7Cu) >> 2);
        p("orientation_rms", ((d[4] & 0x03u) << 3) | ((d[5] & 0xE0u) >> 5));
        p("prob_exist", (d[6] & 0xE0u) >> 5);
        p("meas_state", (d[6] & 0x1Cu) >> 2);
        break;
      case 0x60D: {  // Obj_3_Extended
        unsigned ax = (d[1] << 3u) + ((d[2] & 0xE0u) >> 5u);
        unsigned ay = ((d[2] & 0x1Fu) << 4u) + ((d[3] & 0xF0u) >> 4u);
        unsigned angle = (d[4] << 2u) + ((d[5] & 0xC0u) >> 6u);
        p("id", d[0]);
        p("ax", ax * 0.01 - 10.0);
        p("ay", ay * 0.01 - 2.5);
        p("classification", d[3] & 0x07u);
        p("orientation", angle * 0.4 - 180.0);
        p("length", d[6] * 0.2);
        p("width", d[7] * 0.2);
      } break;
      case 0x201:  // RadarState
        p("max_distance", ((d[1] << 2) + ((d[2] & 0xC0u) >> 6)) << 1);
        p("sensor_id", d[4] & 0x07u);
        p("output_type", (d[5] & 0x0Cu) >> 2);
        p("send_quality", (d[5] & 0x10u) >> 4);
        p("send_ext", (d[5] & 0x20u) >> 5);
        p("rcs_threshold", (d[7] & 0x1Cu) >> 2);
        break;
      default:
        break;
    }
    std::printf("\n");
  }
  return 0;
}

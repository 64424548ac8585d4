// The PTC constants of tier4/nebula's hesai_hw_interface.hpp (commit 606ac41f, Apache-2.0),
// its lines 53-104 unchanged; the closing brace of the namespace added. See ../PROVENANCE.md.
#pragma once
#include <cstdint>

namespace nebula::drivers
{
const int g_pandar_tcp_command_port = 9347;
const uint8_t g_ptc_command_dummy_byte = 0x00;
const uint8_t g_ptc_command_header_high = 0x47;
const uint8_t g_ptc_command_header_low = 0x74;
const uint8_t g_ptc_command_get_lidar_calibration = 0x05;
const uint8_t g_ptc_command_ptp_diagnostics = 0x06;
const uint8_t g_ptc_command_ptp_status = 0x01;
const uint8_t g_ptc_command_ptp_port_data_set = 0x02;
const uint8_t g_ptc_command_ptp_time_status_np = 0x03;
const uint8_t g_ptc_command_ptp_grandmaster_settings_np = 0x04;
const uint8_t g_ptc_command_get_inventory_info = 0x07;
const uint8_t g_ptc_command_get_config_info = 0x08;
const uint8_t g_ptc_command_get_lidar_status = 0x09;
const uint8_t g_ptc_command_set_spin_rate = 0x17;
const uint8_t g_ptc_command_set_sync_angle = 0x18;
const uint8_t g_ptc_command_set_trigger_method = 0x1b;
const uint8_t g_ptc_command_set_standby_mode = 0x1c;
const uint8_t g_ptc_command_set_return_mode = 0x1e;
const uint8_t g_ptc_command_set_clock_source = 0x1f;
const uint8_t g_ptc_command_set_destination_ip = 0x20;
const uint8_t g_ptc_command_set_control_port = 0x21;
const uint8_t g_ptc_command_set_lidar_range = 0x22;
const uint8_t g_ptc_command_get_lidar_range = 0x23;
const uint8_t g_ptc_command_set_ptp_config = 0x24;
const uint8_t g_ptc_command_get_ptp_config = 0x26;
const uint8_t g_ptc_command_set_high_resolution_mode = 0x29;
const uint8_t g_ptc_command_get_high_resolution_mode = 0x28;
const uint8_t g_ptp_command_set_ptp_lock_offset = 0x39;
const uint8_t g_ptp_command_get_ptp_lock_offset = 0x3a;
const uint8_t g_ptc_command_reset = 0x25;
const uint8_t g_ptc_command_set_rotate_direction = 0x2a;
const uint8_t g_ptc_command_lidar_monitor = 0x27;
const uint8_t g_ptc_command_set_up_close_blockage_detection = 0x58;
const uint8_t g_ptc_command_get_up_close_blockage_detection = 0x59;

const uint8_t g_ptc_error_code_no_error = 0x00;
const uint8_t g_ptc_error_code_invalid_input_param = 0x01;
const uint8_t g_ptc_error_code_server_conn_failed = 0x02;
const uint8_t g_ptc_error_code_invalid_data = 0x03;
const uint8_t g_ptc_error_code_out_of_memory = 0x04;
const uint8_t g_ptc_error_code_unsupported_cmd = 0x05;
const uint8_t g_ptc_error_code_fpga_comm_failed = 0x06;
const uint8_t g_ptc_error_code_other = 0x07;

const uint8_t g_tcp_error_unrelated_response = 1;
const uint8_t g_tcp_error_unexpected_payload = 2;
const uint8_t g_tcp_error_timeout = 4;
const uint8_t g_tcp_error_incomplete_response = 8;

const uint16_t g_mtu_size = 1500;
}  // namespace nebula::drivers

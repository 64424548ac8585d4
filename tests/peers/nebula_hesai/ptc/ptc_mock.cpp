// Test-only peer: tier4/nebula's own mock Hesai sensor (MockHesaiSensor of its
// test_hesai_hw_interface.cpp, cut out unchanged by nebula_peer.py into mock_hesai_sensor.inc)
// serving PTC on a free loopback TCP port. Prints the port on stdout, serves until stdin closes.
#include "hesai_ptc_constants.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "mock_hesai_sensor.inc"

int main()
{
  MockHesaiSensor sensor;
  std::printf("%u\n", static_cast<unsigned>(sensor.get_tcp_port()));
  std::fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  return 0;
}

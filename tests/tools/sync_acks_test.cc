// tools/logd/sync_acks.h: sluice-logd --fsync ack answers a RELP message
// only once a sync that began after its write has returned, that is once
// log_worker::synced() has reached the position of the message's round.
#include "logd/sync_acks.h"

#include <doctest/doctest.h>

#include <cstdint>

using sluice_tools::sync_acks;

TEST_CASE("a message is taken only once synced reaches its position, in order") {
  sync_acks a;
  CHECK(a.empty());
  a.add(100);
  a.add(100);
  a.add(250);
  a.add(400);
  CHECK(a.size() == 4);
  CHECK(a.take(0) == 0);
  CHECK(a.take(99) == 0);  // a sync that covered 99 bytes did not cover the round ending at 100
  CHECK(a.take(100) == 2);
  CHECK(a.take(249) == 0);
  CHECK(a.take(399) == 1);
  CHECK(a.size() == 1);
  CHECK(a.take(400) == 1);
  CHECK(a.empty());
  CHECK(a.take(1000) == 0);
}

TEST_CASE("a message written after the sync began waits for the next one, however many come") {
  // Round after round, each synced value covers exactly the rounds before
  // the last: never a message of the last round.
  sync_acks a;
  std::uint64_t pos = 0;
  std::size_t added = 0, taken = 0;
  for (int round = 0; round < 10'000; ++round) {
    const std::uint64_t synced = pos;  // began before this round was written
    pos += 1 + round % 7;
    for (int i = 0; i <= round % 3; ++i, ++added) a.add(pos);
    const std::size_t last_round = static_cast<std::size_t>(round % 3) + 1;
    taken += a.take(synced);
    REQUIRE(taken == added - last_round);
    REQUIRE(a.size() == last_round);
  }
  const std::size_t left = a.size();
  CHECK(a.take(pos) == left);
  CHECK(a.empty());
}

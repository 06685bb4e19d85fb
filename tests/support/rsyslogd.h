// rsyslogd: a real rsyslogd that a test starts in the foreground on its own
// config and port (rsyslogd -n -f CONF -i PIDFILE: no systemd), and stops.
#pragma once

#include <doctest/doctest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "support/temp_dir.h"

namespace sluice::test {

/// Starts rsyslogd on `dir`/rsyslog.conf (written by the caller), its
/// stderr appended to `dir`/rsyslogd.err, and returns its pid once `port`
/// on 127.0.0.1 accepts a connection (polled, at most 20 s; the test fails
/// with rsyslogd's stderr otherwise).
inline pid_t start_rsyslogd(const temp_dir& dir, std::uint16_t port) {
  // rsyslogd (8.2302) sends SIGTERM to its parent when it starts a second
  // time in one parent: ignored here while it runs (stop_rsyslogd() gives
  // the default back), default in the child.
  ::signal(SIGTERM, SIG_IGN);
  ::unlink(dir.file("rsyslog.pid").c_str());  // a SIGKILLed one leaves it
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGTERM, SIG_DFL);
    const std::string err = dir.file("rsyslogd.err");
    std::freopen(err.c_str(), "a", stderr);
    const std::string c = dir.file("rsyslog.conf"), p = dir.file("rsyslog.pid");
    ::execl("/usr/sbin/rsyslogd", "rsyslogd", "-n", "-f", c.c_str(), "-i", p.c_str(), nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 2000; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (up) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("rsyslogd did not listen on port " << port << ": " << slurp(dir.file("rsyslogd.err")));
  return pid;
}

/// Whether rsyslogd and its imrelp module (Debian: rsyslog-relp) are here.
inline bool rsyslogd_has_imrelp() {
  return ::access("/usr/sbin/rsyslogd", X_OK) == 0 &&
         (::access("/usr/lib/x86_64-linux-gnu/rsyslog/imrelp.so", R_OK) == 0 ||
          ::access("/usr/lib/rsyslog/imrelp.so", R_OK) == 0);
}

/// Writes `dir`/rsyslog.conf: imrelp on 127.0.0.1:`port` into omfile `out`,
/// one line per message as rsyslog's `property` gives it (msg, rawmsg). The
/// main queue is direct, so that a message is in omfile's file (the
/// kernel's page cache) before imrelp answers it: a SIGKILL then loses
/// nothing that was answered.
inline void write_imrelp_conf(const temp_dir& dir, std::uint16_t port, const std::string& out,
                              const std::string& property = "msg", const std::string& global_extra = "") {
  std::ofstream conf(dir.file("rsyslog.conf"));
  conf << "global(workDirectory=\"" << dir.path.string() << "\"" << global_extra << ")\n"
       << "main_queue(queue.type=\"Direct\")\n"
       << "module(load=\"imrelp\")\n"
       << "template(name=\"m\" type=\"string\" string=\"%" << property << "%\\n\")\n"
       << "ruleset(name=\"r\") { action(type=\"omfile\" file=\"" << out << "\" template=\"m\") }\n"
       << "input(type=\"imrelp\" address=\"127.0.0.1\" port=\"" << port << "\" ruleset=\"r\")\n";
}

/// Sends `sig` to a started rsyslogd, reaps it and sets `pid` to -1.
inline void stop_rsyslogd(pid_t& pid, int sig = SIGTERM) {
  if (pid < 0) return;
  ::kill(pid, sig);
  int status = 0;
  ::waitpid(pid, &status, 0);
  pid = -1;
  ::signal(SIGTERM, SIG_DFL);
}

}  // namespace sluice::test

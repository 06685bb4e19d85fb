// sluice-log: appends the lines of standard input to a log file, rotated by
// size, like Apache's rotatelogs or daemontools' multilog, or sends each line
// as one message to a syslog receiver (TCP or a Unix socket) or to a Kafka
// topic. Standard input is a readable over an fd_source split by
// for_each_line(); each line (with its optional timestamp) is one print()
// into the output writable.
//
// A file (log_file_output.h): a log_worker (the worker I/O thread
// rotates, reopens and syncs the file), and a worker_sink writable on this
// thread's loop. A line is one chunk, and the worker rotates only between
// chunks, so a line is never torn or split across two files.
//
// A network DEST (log_net_output.h): a syslog_writable (which reconnects on its own) or a Kafka
// writable; a line is one message, and each write's callback says whether it
// was sent, which the counts and the exit status report.
//
// Signals arrive through the loop (sluice/signals.h): SIGHUP asks the worker
// to reopen; SIGTERM and SIGINT stop the reading (fd_source::stop()), which
// makes what was read the whole input; its end end()s the writable, and once
// it has finished (every line handed over is written or sent) the worker, if
// any, is closed, which syncs (per --fsync) and closes the file. A network
// DEST gets --grace to take the rest after the signal; then what is left is
// dropped and counted.
//
// The loop's thread only reads and splits: a slow disk or receiver holds the
// output, whose completions then come late, so 'drain' holds the reading back.
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "tool.h"
#include "nonblocking_stdin.h"
#include "args.h"
#include "log_dest.h"
#include "log_file_output.h"
#include "log_net_output.h"
#include "metrics_server.h"
#include "log_usage.h"
#include "clock_stamp.h"
#include "follow.h"
#include "shutdown_signals.h"
#include "systemd.h"
#include "sluice/sluice.h"
#include "tls_files.h"
#if SLUICE_LOG_TLS
#include "load_module.h"
#include "log_tls.h"
#endif

namespace {

using sluice_tools::parse_fsync;
using sluice_tools::parse_size;

constexpr sluice_tools::tool this_tool{"sluice-log", usage_text};

struct options {
  sluice_tools::log_destination dest;
  std::string dest_text;  // as given, for messages
  sluice::log_options log;
  sluice::syslog_options syslog;
  sluice::relp_options relp;
  std::vector<std::pair<std::string, std::string>> kafka_config;  // -X, in order
  std::chrono::milliseconds grace{5000};
  std::string grace_text = "5s";  // as given, for messages
  bool timestamp = false;
  bool stats = false;
  bool json = false;
  std::size_t max_line_length = sluice::line_options{}.max_line_length;
  std::size_t max_message = sluice_tools::default_max_message;
  sluice_tools::log_spool_settings spool;
  sluice_tools::metrics_args metrics;  // --metrics
  std::string tls_ca, tls_cert, tls_key, tls_name;  // syslog+tls://
  sluice_tools::follow_options follow;  // --follow, --state, --poll-interval
};

#if SLUICE_LOG_TLS
// syslog+tls://: the files are checked (exit 2 with the reason), then
// loaded once, for every connection, by the TLS module (OpenSSL's reason,
// exit 2, for one it cannot load), and the receiver verified by --tls-ca
// and --tls-name.
void set_up_tls(options& o) {
  if (o.tls_cert.empty() != o.tls_key.empty())
    this_tool.usage_error(o.tls_cert.empty() ? "--tls-key goes with --tls-cert FILE" : "--tls-cert needs --tls-key FILE");
  for (auto [opt, path] : {std::pair{"--tls-ca", &o.tls_ca}, {"--tls-cert", &o.tls_cert}, {"--tls-key", &o.tls_key}}) {
    if (path->empty()) continue;
    const std::string why = sluice_tools::tls_file_problem(opt, *path);
    if (!why.empty()) this_tool.usage_error(why);
  }
  if (!o.tls_key.empty()) sluice_tools::warn_if_key_shared("sluice-log", "--tls-key", o.tls_key);
  std::string why;
  const bool relp = o.dest.type == sluice_tools::log_destination::kind::relp_tls;
  void* f = sluice_tools::load_module_symbol("sluice-log-tls.so", SLUICE_LOG_TLS_MODULE,
                                             relp ? "sluice_log_use_tls_relp" : "sluice_log_use_tls", why);
  if (!f) this_tool.usage_error(std::string(relp ? "relp+tls://" : "syslog+tls://") + ": cannot load sluice-log's TLS module: " + why);
  const sluice_log_tls_files files{o.tls_ca, o.tls_cert, o.tls_key, o.tls_name};
  const bool loaded = relp ? reinterpret_cast<sluice_log_use_tls_relp_fn>(f)(&o.relp, &files, &why)
                           : reinterpret_cast<sluice_log_use_tls_fn>(f)(&o.syslog, &files, &why);
  if (!loaded) {
    std::string named = !o.tls_ca.empty() ? "--tls-ca " + o.tls_ca : "";
    if (!o.tls_cert.empty()) named += (named.empty() ? "" : ", ") + ("--tls-cert " + o.tls_cert + ", --tls-key " + o.tls_key);
    this_tool.usage_error((named.empty() ? std::string("TLS") : named) + ": " + why);
  }
}
#endif

options parse_args(int argc, char** argv) {
  options o;
  // relp:// into a receiver that answers after its fsync (sluice-logd
  // --fsync ack): the window bounds what the fsync in flight and the batch
  // gathering behind it hold together, so about window / 2 messages go a
  // fsync. 1,024 (the library's default) made ~380 messages a fsync and
  // 4,096 ~1,800, 4.7x fewer fsyncs (docs/benchmarks.md, "RELP with --fsync
  // ack, round 4"); past that the receiver's batches no longer grew.
  o.relp.window = 4096;
  enum {
    max_size = 256, keep, timestamp, fsync, max_line_length, stats, json,
    framing, facility, severity, app_name, hostname, give_up_after, grace, max_message, spool, spool_max,
      compress, window, tls_ca, tls_cert, tls_key, tls_name, follow, state, poll_interval, metrics,
  };
  static const option long_options[] = {
      {"max-size", required_argument, nullptr, max_size},
      {"keep", required_argument, nullptr, keep},
      {"compress", required_argument, nullptr, compress},
      {"timestamp", no_argument, nullptr, timestamp},
      {"fsync", required_argument, nullptr, fsync},
      {"max-line-length", required_argument, nullptr, max_line_length},
      {"stats", no_argument, nullptr, stats},
      {"json", no_argument, nullptr, json},
      {"metrics", required_argument, nullptr, metrics},
      {"framing", required_argument, nullptr, framing},
      {"facility", required_argument, nullptr, facility},
      {"severity", required_argument, nullptr, severity},
      {"app-name", required_argument, nullptr, app_name},
      {"hostname", required_argument, nullptr, hostname},
      {"give-up-after", required_argument, nullptr, give_up_after},
      {"grace", required_argument, nullptr, grace},
      {"max-message", required_argument, nullptr, max_message},
      {"spool", required_argument, nullptr, spool},
      {"spool-max", required_argument, nullptr, spool_max},
      {"window", required_argument, nullptr, window},
      {"tls-ca", required_argument, nullptr, tls_ca},
      {"tls-cert", required_argument, nullptr, tls_cert},
      {"tls-key", required_argument, nullptr, tls_key},
      {"tls-name", required_argument, nullptr, tls_name},
      {"follow", required_argument, nullptr, follow},
      {"state", required_argument, nullptr, state},
      {"poll-interval", required_argument, nullptr, poll_interval},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  // Which options were given, by kind, to check them against DEST.
  const char* file_option = nullptr;    // --max-size, --keep, --fsync, --compress
  const char* syslog_option = nullptr;  // --framing
  const char* message_option = nullptr; // --facility ... --give-up-after, --max-message: syslog and RELP
  const char* relp_option = nullptr;    // --window
  const char* network_option = nullptr; // --grace, --spool, --spool-max
  const char* kafka_option = nullptr;   // -X
  const char* tls_option = nullptr;     // --tls-*
  bool spool_max_given = false;
  const char* follow_option = nullptr;  // --state, --poll-interval
  opterr = 0;  // the messages below say more
  int c;
  std::uint64_t v = 0;
  while ((c = ::getopt_long(argc, argv, ":hX:", long_options, nullptr)) != -1) {
    switch (c) {
      case max_size:
        if (!parse_size(optarg, true, UINT64_MAX >> 1, v))
          this_tool.usage_error(std::string("--max-size wants a number of bytes, with K, M or G or none, got '") + optarg + "'");
        o.log.max_size = v;
        file_option = "--max-size";
        break;
      case keep:
        if (!parse_size(optarg, false, 100'000, v))
          this_tool.usage_error(std::string("--keep wants a whole number from 0 to 100000, got '") + optarg + "'");
        o.log.keep = static_cast<unsigned>(v);
        file_option = "--keep";
        break;
      case compress:
        if (!sluice_tools::parse_compress(optarg, o.log))
          this_tool.usage_error(std::string("--compress wants none, gzip[:1-9] or zstd[:1-22], got '") + optarg + "'");
        if (!sluice::log_compression_available(o.log.compress))
          this_tool.usage_error(std::string("--compress ") + optarg + ": this sluice-log was built without it");
        file_option = "--compress";
        break;
      case timestamp:
        o.timestamp = true;
        break;
      case fsync:
        if (!parse_fsync(optarg, o.log))
          this_tool.usage_error(std::string("--fsync wants never, end, bytes=SIZE or ms=T (1 to 86400000), got '") + optarg + "'");
        file_option = "--fsync";
        break;
      case max_line_length:
        if (!parse_size(optarg, false, 1ull << 30, v) || v < 1)
          this_tool.usage_error(std::string("--max-line-length wants a whole number of bytes from 1 to 1073741824, got '") +
                      optarg + "'");
        o.max_line_length = static_cast<std::size_t>(v);
        break;
      case stats:
        o.stats = true;
        break;
      case json:
        o.json = true;
        break;
      case metrics:
        sluice_tools::add_metrics_arg(this_tool, o.metrics, optarg);
        break;
      case framing:
        if (std::strcmp(optarg, "octet") == 0) o.syslog.framing = sluice::syslog_framing::octet_counting;
        else if (std::strcmp(optarg, "lf") == 0) o.syslog.framing = sluice::syslog_framing::lf;
        else this_tool.usage_error(std::string("--framing wants octet or lf, got '") + optarg + "'");
        syslog_option = "--framing";
        break;
      case facility:
        if (!sluice_tools::parse_syslog_facility(optarg, o.syslog.header.facility))
          this_tool.usage_error(std::string("--facility wants a name (user, daemon, local0 ...) or 0 to 23, got '") + optarg +
                      "'");
        message_option = "--facility";
        break;
      case severity:
        if (!sluice_tools::parse_syslog_severity(optarg, o.syslog.header.severity))
          this_tool.usage_error(std::string("--severity wants emerg, alert, crit, err, warning, notice, info, debug or 0 to 7, "
                                  "got '") + optarg + "'");
        message_option = "--severity";
        break;
      case app_name:
        if (optarg[0] == '\0') this_tool.usage_error("--app-name is empty");
        o.syslog.header.app_name = optarg;
        message_option = "--app-name";
        break;
      case hostname:
        if (optarg[0] == '\0') this_tool.usage_error("--hostname is empty");
        o.syslog.header.hostname = optarg;
        message_option = "--hostname";
        break;
      case give_up_after: {
        std::chrono::milliseconds t{};
        if (!sluice_tools::parse_duration(optarg, t) || t.count() == 0)
          this_tool.usage_error(std::string("--give-up-after wants a time above 0, e.g. 30s, 500ms or 2m, got '") + optarg + "'");
        o.syslog.give_up_after = t;
        message_option = "--give-up-after";
        break;
      }
      case grace:
        if (!sluice_tools::parse_duration(optarg, o.grace))
          this_tool.usage_error(std::string("--grace wants a time, e.g. 5s, 500ms or 0, got '") + optarg + "'");
        o.grace_text = optarg;
        network_option = "--grace";
        break;
      case max_message:
        if (!parse_size(optarg, true, 1ull << 30, v) || v < 1)
          this_tool.usage_error(std::string("--max-message wants a number of bytes from 1 to 1G, with K, M or G or none, got '") +
                      optarg + "'");
        o.max_message = static_cast<std::size_t>(v);
        message_option = "--max-message";
        break;
      case window:
        if (!parse_size(optarg, false, 1'000'000, v) || v < 1)
          this_tool.usage_error(std::string("--window wants a whole number of messages from 1 to 1000000, got '") + optarg + "'");
        o.relp.window = static_cast<std::size_t>(v);
        relp_option = "--window";
        break;
      case spool:
        if (optarg[0] == '\0') this_tool.usage_error("--spool is empty");
        o.spool.dir = optarg;
        network_option = "--spool";
        break;
      case spool_max:
        if (!parse_size(optarg, true, UINT64_MAX >> 1, v) || v < 64 * 1024)
          this_tool.usage_error(std::string("--spool-max wants a number of bytes from 64K, with K, M or G or none, got '") +
                                optarg + "'");
        o.spool.max_bytes = v;
        spool_max_given = true;
        network_option = "--spool-max";
        break;
      case tls_ca:
      case tls_cert:
      case tls_key:
      case tls_name: {
        std::string* field[] = {&o.tls_ca, &o.tls_cert, &o.tls_key, &o.tls_name};
        static const char* names[] = {"--tls-ca", "--tls-cert", "--tls-key", "--tls-name"};
        if (optarg[0] == '\0') this_tool.usage_error(std::string(names[c - tls_ca]) + " is empty");
        *field[c - tls_ca] = optarg;
        tls_option = names[c - tls_ca];
        break;
      }
      case 'X': {
        const char* eq = std::strchr(optarg, '=');
        if (!eq || eq == optarg || eq[1] == '\0')
          this_tool.usage_error(std::string("-X wants KEY=VALUE (a librdkafka property), got '") + optarg + "'");
        o.kafka_config.emplace_back(std::string(optarg, static_cast<std::size_t>(eq - optarg)), std::string(eq + 1));
        kafka_option = "-X";
        break;
      }
      case follow:
        o.follow.paths.emplace_back(sluice_tools::check_follow_path(this_tool, optarg, o.follow.paths));
        break;
      case state:
        if (optarg[0] == '\0') this_tool.usage_error("--state is empty");
        o.follow.state_dir = optarg;
        follow_option = "--state";
        break;
      case poll_interval:
        if (!sluice_tools::parse_duration(optarg, o.follow.poll_interval) || o.follow.poll_interval.count() == 0)
          this_tool.usage_error(std::string("--poll-interval wants a time above 0, e.g. 1s or 250ms, got '") + optarg + "'");
        follow_option = "--poll-interval";
        break;
      case 'h':
        this_tool.help();
      default:
        this_tool.bad_option(c, argv, ":hX:");
    }
  }
  if (o.json && !o.stats) this_tool.usage_error("--json goes with --stats");
  if (follow_option && o.follow.paths.empty()) this_tool.usage_error(std::string(follow_option) + " goes with --follow PATH");
  o.follow.max_line_length = o.max_line_length;
  if (spool_max_given && o.spool.dir.empty())
    this_tool.usage_error("--spool-max goes with --spool");
  if (optind == argc)
    this_tool.usage_error("missing DEST (a FILE, syslog://HOST:PORT, syslog+unix:PATH, syslog+tls://HOST:PORT, relp://HOST:PORT, "
                          "relp+tls://HOST:PORT or kafka://...)");
  if (argc - optind > 1) this_tool.usage_error(std::string("one DEST only, got also '") + argv[optind + 1] + "'");
  o.dest_text = argv[optind];
  if (o.dest_text.empty()) this_tool.usage_error("DEST is empty");
  std::string why;
  if (!sluice_tools::parse_log_destination(o.dest_text, o.dest, why)) this_tool.usage_error(why);
  using kind = sluice_tools::log_destination::kind;
  const kind k = o.dest.type;
  auto only = [&](const char* opt, const char* what) {
    if (opt) this_tool.usage_error(std::string(opt) + " applies to " + what + " only, not to '" + o.dest_text + "'");
  };
  if (k != kind::file) only(file_option, "a FILE");
  // Compression acts on rotated files only: without them it would be
  // accepted and never happen.
  if (o.log.compress != sluice::log_options::compression::none && o.log.max_size == 0)
    this_tool.usage_error("--compress goes with --max-size (without rotation there is nothing to compress)");
  if (o.log.compress != sluice::log_options::compression::none && o.log.keep == 0)
    this_tool.usage_error("--compress goes with a --keep above 0 (--keep 0 keeps no rotated file to compress)");
  if (k != kind::syslog_tcp && k != kind::syslog_unix) only(syslog_option, "syslog:// and syslog+unix:");
  if (k == kind::file || k == kind::kafka)
    only(message_option, "syslog://, syslog+unix:, syslog+tls://, relp:// and relp+tls://");
  if (k != kind::syslog_tls && k != kind::relp_tls) only(tls_option, "syslog+tls:// and relp+tls://");
  if (k != kind::relp_tcp && k != kind::relp_tls) only(relp_option, "relp:// and relp+tls://");
  if (k != kind::kafka) only(kafka_option, "kafka://");
  if (k == kind::file) only(network_option, "a network DEST (syslog://, syslog+unix:, relp://, kafka://)");
  if (k == kind::file) sluice_tools::check_not_followed(this_tool, o.dest.file, o.follow.paths);
#if !SLUICE_LOG_KAFKA
  if (k == kind::kafka)
    this_tool.usage_error("kafka:// needs Kafka support, and this sluice-log was built without it (build it with "
                "librdkafka: Debian's librdkafka-dev, meson -Dkafka=enabled)");
#endif
  o.syslog.max_message = o.max_message;
  if (k == kind::syslog_tcp || k == kind::syslog_tls) {
    o.syslog.host = o.dest.host;
    o.syslog.port = o.dest.port;
    if (k == kind::syslog_tls) {
#if SLUICE_LOG_TLS
      set_up_tls(o);
#else
      this_tool.usage_error("syslog+tls:// needs TLS, and this sluice-log was built without it (build it with "
                            "OpenSSL: Debian's libssl-dev, meson -Dtls=enabled)");
#endif
    }
  } else if (k == kind::syslog_unix) {
    o.syslog.unix_path = o.dest.file;
  } else if (k == kind::relp_tcp || k == kind::relp_tls) {
    o.relp.host = o.dest.host;
    o.relp.port = o.dest.port;
    o.relp.header = o.syslog.header;
    o.relp.give_up_after = o.syslog.give_up_after;
    o.relp.max_message = o.max_message;
    if (k == kind::relp_tls) {
#if SLUICE_LOG_TLS
      set_up_tls(o);
#else
      this_tool.usage_error("relp+tls:// needs TLS, and this sluice-log was built without it (build it with "
                            "OpenSSL: Debian's libssl-dev, meson -Dtls=enabled)");
#endif
    }
  }
  return o;
}

// The run: standard input, split into lines, into the destination's
// writable, with backpressure; the destination (log_output.h) opens,
// counts and reports.
class log_tool {
 public:
  explicit log_tool(const options& o) : o_(o) {
    if (o.dest.network())
      out_ = std::make_unique<sluice_tools::log_net_output>(this_tool, o.dest, o.dest_text, o.syslog, o.relp,
                                                            o.kafka_config, o.max_message, o.spool);
    else
      out_ = std::make_unique<sluice_tools::log_file_output>(o.dest.file, o.dest_text, o.log);
  }

  int run() {
    auto& loop = sluice::loop::current();
    metrics_ = sluice_tools::start_metrics(this_tool, o_.metrics, "sluice_log", [this] { return metrics_table(); });
    if (metrics_) n_.age.enable(loop);
    // The signals come to the loop: their tasks never run inside a line
    // (see hold_shutdown_signals()).
    const sigset_t old_mask = sluice_tools::hold_shutdown_signals();
    // Each watch takes an fd (an eventfd): with none left, say so and stop.
    std::error_code ec;
    term_ = sluice::on_signal(loop, SIGTERM, [this] { stop_signal(); }, ec);
    if (!ec) int_ = sluice::on_signal(loop, SIGINT, [this] { stop_signal(); }, ec);
    if (!ec) hup_ = sluice::on_signal(loop, SIGHUP, [this] { out_->reopen(); }, ec);
    if (ec) {
      std::fprintf(stderr, "sluice-log: cannot handle signals: %s\n", ec.message().c_str());
      return 1;
    }

    // The worker's thread, and librdkafka's, start with the signals held,
    // and so keep them blocked.
    const bool opened = out_->open();
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    if (!opened) return 1;
    notify_.ready();  // sd_notify under systemd (Type=notify): the output is open
    out().on(sluice::event::error, [this](std::error_code e) { output_failed(e); });
    out().on(sluice::event::drain, [this] {
      if (follower_ && !stopping_) return follower_->resume();
      if (!waiting_ || !in_ || stopping_) return;
      waiting_ = false;
      in_->resume();
    });

    if (!o_.follow.paths.empty()) {
      // --follow replaces standard input, which is not read at all.
      follower_ = std::make_unique<sluice_tools::follower>(
          o_.follow, [this](std::string_view line, std::uint64_t ticket) { return !stopping_ && write_line(line, ticket); },
          [this](const std::string& why) {
            std::fprintf(stderr, "sluice-log: %s\n", why.c_str());
            status_ = 1;
            stop_reading();
          });
      if (!follower_->start()) {
        status_ = 1;
        finish_output();
      }
    } else {
      stdin_.set();
      in_ = sluice::make_fd_readable(STDIN_FILENO, false);
      in_->on(sluice::event::error, [this](std::error_code e) { read_error_ = e; });
      sluice::for_each_line(
          *in_, [this](std::string_view line) { return on_line(line); },
          [this](std::error_code e) { lines_done(e); },
          {.max_line_length = o_.max_line_length});
    }
    loop.run();
    stdin_.restore();
    // Every callback has come: the positions of what was acknowledged.
    if (follower_) follower_->save_final();
    if (!out_->report(n_, {.finished = finished_, .failed = failed_, .ok_so_far = status_ == 0, .reason = reason_}))
      status_ = 1;
    if (o_.stats) sluice_tools::print_stats("sluice-log", stats_table(), o_.json);
    return status_;
  }

 private:
  sluice::writable& out() noexcept { return out_->stream(); }

  // The one table of --stats and --metrics: the destination's rows, then
  // the follower's (so --stats is one line, or one JSON object).
  sluice_tools::stat_table stats_table() const {
    sluice_tools::stat_table t = out_->stats(n_);
    if (follower_) follower_->add_stats(t);
    return t;
  }
  // /metrics: the same rows, in the same order, with the gauges of now.
  sluice_tools::stat_table metrics_table() const {
    sluice_tools::stat_table t = out_->metrics(n_);
    if (follower_) {
      follower_->add_stats(t);
      follower_->add_gauges(t);
    }
    return t;
  }

  bool network() const noexcept { return out_->network(); }

  // A line of standard input; backpressure pauses the reading.
  bool on_line(std::string_view line) {
    if (stopping_) return false;
    if (!write_line(line, 0) && !waiting_ && !out().errored() && !out().destroyed()) {
      // Backpressure: no more input until 'drain'. The rest of the chunk in
      // hand is still split and written (at most a read's worth).
      waiting_ = true;
      in_->pause();
    }
    return true;
  }

  // One line: one chunk, so that rotation never splits it; to a network
  // DEST, one message, without its newline. `ticket`: the follower's, told
  // when the line lands. False: wait for 'drain'.
  bool write_line(std::string_view line, std::uint64_t ticket) {
    n_.age.added(n_.lines, n_.written + n_.unsent);
    ++n_.lines;
    // The counts say what landed: each callback comes once, with the truth.
    auto landed = [this, ticket](std::error_code ec) {
      if (!ec) ++n_.written;
      else ++n_.unsent;
      out_->landed();
      if (follower_) follower_->acked(ticket, !ec);
    };
    const bool net = network();
    bool more;
    if (o_.timestamp) {
      long usec = 0;
      const std::string_view secs = stamp_.seconds(usec);
      more = out().vprint(net ? "{}.{:06}Z {}" : "{}.{:06}Z {}\n", fmt::make_format_args(secs, usec, line), landed);
    } else {
      more = out().vprint(net ? "{}" : "{}\n", fmt::make_format_args(line), landed);
    }
    return more;
  }

  void lines_done(std::error_code ec) {
    // The reading was stopped on purpose, or the file failed; a network DEST
    // that failed still ends its stream, whose callbacks then count the rest.
    if (stopping_ || (failed_ && !network())) return;
    if (ec == sluice::errc::line_too_long) {
      std::fprintf(stderr, "sluice-log: standard input: line %zu is longer than %zu bytes (%s)\n", n_.lines + 1,
                   o_.max_line_length, sluice::code_name(ec).c_str());
      status_ = 1;
    } else if (ec == std::errc::not_enough_memory) {
      // The lines before are written; the rest of the input is not read.
      std::fprintf(stderr, "sluice-log: out of memory at line %zu of standard input\n", n_.lines + 1);
      status_ = 1;
    } else if (ec) {
      std::fprintf(stderr, "sluice-log: standard input: %s\n", (read_error_ ? read_error_ : ec).message().c_str());
      status_ = 1;
    }
    finish_output();
  }

  // SIGTERM, SIGINT: nothing more is read, and what was read is written,
  // as at the end of the input: the stream's read-ahead, then the
  // splitter's unfinished line as a last line; then lines_done() ends the
  // output. Destroying the stream here would drop both: lines already read
  // from the input would be lost although the signal only asked to stop.
  // A network DEST has --grace to take it all; a second signal ends the
  // wait.
  void stop_signal() {
    notify_.stopping();
    if (network() && !finished_) {
      if (grace_timer_ != 0) return give_up("a second signal ended the wait");
      grace_timer_ = sluice::loop::current().set_timeout(o_.grace, [this] {
        grace_timer_ = 0;
        give_up("the receiver did not take them within --grace " + o_.grace_text + " of the signal");
      });
    }
    stop_reading();
  }

  void stop_reading() {
    if (follower_ && !input_stopped_) {
      // Following has no end of its own: the stop is its end.
      input_stopped_ = true;
      follower_->stop();
      if (!stopping_) finish_output();
      return;
    }
    if (!in_ || input_stopped_ || stopping_ || (failed_ && !network())) return;
    input_stopped_ = true;
    in_->stop();
  }

  // Whatever waits in the network stream is dropped: each callback says so,
  // and counts. The lines read but not yet split are let through too, into
  // the destroyed stream, to be counted the same way.
  void give_up(std::string why) {
    if (gave_up_) return;
    gave_up_ = true;
    if (grace_timer_ != 0) sluice::loop::current().clear_timeout(grace_timer_);
    grace_timer_ = 0;
    if (reason_.empty()) reason_ = std::move(why);
    if (!out().destroyed()) out().destroy();
    release_input();
  }

  // The reading ends where it is, and a paused input flows again: what it
  // holds still comes out, as lines.
  void release_input() {
    stop_reading();
    if (waiting_ && in_ && !in_->destroyed()) {
      waiting_ = false;
      in_->resume();
    }
  }

  void finish_output() {
    stopping_ = true;
    if (in_ && !in_->destroyed()) in_->destroy();
    out().end([this](std::error_code ec) {
      if (ec && !network()) return output_failed(ec);
      if (ec && reason_.empty()) reason_ = ec.message();
      finished_ = !ec;
      quit();
    });
  }

  void output_failed(std::error_code ec) {
    if (failed_) return;
    failed_ = true;
    status_ = 1;
    if (network()) {
      // The stream is destroyed with `ec` (--give-up-after, a Kafka delivery
      // failure): the rest of what was read is counted as not sent, and
      // log_net_output::report() names `ec`.
      reason_ = ec.message();
      give_up(reason_);
      return;
    }
    std::fprintf(stderr, "sluice-log: %s: %s\n", o_.dest_text.c_str(), sluice_tools::file_error(ec).c_str());
    // Nothing more can be written: stop reading too.
    if (in_ && !in_->destroyed()) in_->destroy();
    quit();
  }

  // The signal watches and the grace timer keep the loop running; without
  // them it ends.
  void quit() {
    if (follower_) follower_->stop();
    term_.reset();
    int_.reset();
    hup_.reset();
    if (grace_timer_ != 0) sluice::loop::current().clear_timeout(grace_timer_);
    grace_timer_ = 0;
  }

  const options& o_;
  std::unique_ptr<sluice_tools::log_output> out_;
  std::unique_ptr<sluice::fd_readable> in_;
  std::unique_ptr<sluice_tools::follower> follower_;  // --follow, instead of in_
  sluice::signal_watch term_, int_, hup_;
  sluice::timer_id grace_timer_ = 0;
  sluice_tools::clock_stamp stamp_;
  sluice_tools::log_counts n_;
  std::unique_ptr<sluice_tools::metrics_server> metrics_;  // --metrics
  sluice_tools::nonblocking_stdin stdin_;
  int status_ = 0;
  bool waiting_ = false;   // paused until 'drain'
  bool input_stopped_ = false;  // SIGTERM or SIGINT: the input ends where the reading stopped
  bool stopping_ = false;  // end of input, or an error: no more lines
  bool finished_ = false;  // every line is in the file, or sent
  bool failed_ = false;    // the file failed, or the network stream gave up with an error
  bool gave_up_ = false;   // the network stream was destroyed: what it held is dropped
  std::string reason_;     // why messages were not sent
  std::error_code read_error_;
  sluice_tools::systemd::notifier notify_{[this] {
    return std::to_string(n_.lines) + " lines, " + std::to_string(n_.written) + " written, " +
           std::to_string(n_.unsent) + " not sent";
  }};
};

}  // namespace

int main(int argc, char** argv) {
  return this_tool.run(argc, argv, parse_args, [](const options& o) { return log_tool(o).run(); });
}

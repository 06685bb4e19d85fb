// Lines: line_splitter's rules ("\n" and "\r\n", a last line without "\n",
// empty lines, bytes as bytes, the maximum length), the same lines however
// the data is cut into chunks, no copy for a line inside one chunk; and the
// two ways in: line_reader over an fd, for_each_line over a readable; and
// the count alone (line_counter, count_lines), which must agree with them.
#include "support/printers.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/fs/read_stream.h"
#include "sluice/lines/for_each_line.h"
#include "sluice/lines/line_counter.h"
#include "sluice/lines/line_reader.h"
#include "sluice/lines/line_splitter.h"
#include "sluice/loop/loop.h"
#include "sluice/sources/fd_source.h"
#include "sluice/stream/readable.h"
#include "support/readable_options.h"
#include "support/pipe_fds.h"
#include "support/temp_dir.h"
#include "support/time_scale.h"

using namespace sluice;
using sluice::test::on_loop;
using namespace std::string_literals;
using sluice::test::pipe_fds;
using sluice::test::temp_file;
namespace fs = std::filesystem;

namespace {


using lines = std::vector<std::string>;

// "!" + the error's code name. (Built with append: g++ 12 gives a false
// -Wrestrict for "!" + std::string at -O3, GCC PR 105329.)
std::string error_line(std::error_code ec) {
  std::string s = "!";
  s += code_name(ec);
  return s;
}

// Splits `data` cut at `cuts` (offsets, ascending) into lines; the error, if
// any, is appended as "!" + its code name.
lines split(std::string_view data, const std::vector<std::size_t>& cuts = {},
            std::size_t max = line_options{}.max_line_length) {
  line_splitter s(max);
  lines out;
  std::error_code ec;
  std::size_t from = 0;
  std::vector<std::size_t> ends = cuts;
  ends.push_back(data.size());
  for (std::size_t to : ends) {
    // Each chunk is its own copy, freed after use: a view kept past its
    // chunk would be caught by the sanitizers.
    const std::string chunk(data.substr(from, to - from));
    s.feed(chunk);
    while (auto line = s.next(ec)) out.emplace_back(*line);
    if (ec) break;  // a failed splitter takes no more chunks (feed()'s precondition)
    from = to;
  }
  if (!ec)
    if (auto last = s.finish(ec)) out.emplace_back(*last);
  if (ec) out.push_back(error_line(ec));
  return out;
}


struct open_fd {
  int fd;
  explicit open_fd(const fs::path& p) : fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC)) { REQUIRE(fd >= 0); }
  ~open_fd() { ::close(fd); }
};

// Every line of an fd through line_reader; the error as in split().
lines read_lines(int fd, line_options o = {}) {
  line_reader r(fd, o);
  lines out;
  std::error_code ec;
  while (auto line = r.next(ec)) out.emplace_back(*line);
  if (ec) out.push_back(error_line(ec));
  return out;
}

const std::string too_long = "!ERR_SLUICE_LINE_TOO_LONG";

// A source that pushes the given chunks one per turn (from outside read(),
// so each goes straight out as 'data'), then EOF, or an error at the end, or
// nothing more if `hang`.
class chunks_source : public source {
 public:
  chunks_source(loop& l, std::vector<std::string> chunks, std::error_code fail = {}, bool hang = false)
      : loop_(l), chunks_(std::move(chunks)), fail_(fail), hang_(hang) {}
  ~chunks_source() override { loop_.cancel(this); }
  void read(std::size_t) override {
    loop_.set_immediate(
        [this] {
          if (next_ < chunks_.size()) {
            stream().push(std::string_view(chunks_[next_++]));
          } else if (hang_) {
            return;
          } else if (fail_) {
            stream().destroy(fail_);
          } else {
            stream().push_eof();
          }
        },
        this);
  }
  std::error_code destroy(std::error_code err) noexcept override {
    loop_.cancel(this);
    ++destroys;
    return err;
  }
  const std::vector<std::string>& chunks() const { return chunks_; }
  int destroys = 0;

 private:
  loop& loop_;
  std::vector<std::string> chunks_;
  std::error_code fail_;
  bool hang_;
  std::size_t next_ = 0;
};

struct line_run {
  loop l;
  std::unique_ptr<readable> r;
  chunks_source* src;
  lines got;
  std::vector<std::error_code> done;  // every call of done
  std::vector<std::string> events;

  explicit line_run(std::vector<std::string> chunks, std::error_code fail = {}, bool hang = false) {
    auto s = std::make_unique<chunks_source>(l, std::move(chunks), fail, hang);
    src = s.get();
    readable_options o;
    o.event_loop = &l;
    r = std::make_unique<readable>(std::move(s), o);
    r->on(event::close, [this] { events.push_back("close"); });
    r->on(event::end, [this] { events.push_back("end"); });
  }
  template <class F>
  void start(F fn, line_options o = {}) {
    for_each_line(*r, std::move(fn), [this](std::error_code ec) { done.push_back(ec); }, o);
  }
  void start(line_options o = {}) {
    start([this](std::string_view line) { got.emplace_back(line); }, o);
  }
};

}  // namespace

// ---- line_splitter: the rules

TEST_CASE("\"\\n\" and \"\\r\\n\" end lines and are not part of them") {
  CHECK(split("a\nb\r\nc\n") == lines{"a", "b", "c"});
  CHECK(split("one\r\ntwo\r\n") == lines{"one", "two"});
}

TEST_CASE("a last line without a newline is a line") {
  CHECK(split("a\nb") == lines{"a", "b"});
  CHECK(split("only") == lines{"only"});
  CHECK(split("a\r\nb\r") == lines{"a", "b\r"});  // a final "\r" alone ends nothing
}

TEST_CASE("empty input has no lines; empty lines are lines") {
  CHECK(split("") == lines{});
  CHECK(split("\n") == lines{""});
  CHECK(split("\n\n") == lines{"", ""});
  CHECK(split("\r\n") == lines{""});
  CHECK(split("a\n\nb\n\r\n") == lines{"a", "", "b", ""});
}

TEST_CASE("a \"\\r\" that is not before \"\\n\" is an ordinary byte") {
  CHECK(split("a\rb\n") == lines{"a\rb"});
  CHECK(split("\r\r\n") == lines{"\r"});
  CHECK(split("\r") == lines{"\r"});
}

TEST_CASE("bytes are bytes: NULs, high bytes and invalid UTF-8 pass through") {
  const std::string bin = "a\0b\n\xff\xfe\0\r\n\x80\0"s;
  CHECK(split(bin) == lines{"a\0b"s, "\xff\xfe\0"s, "\x80\0"s});
}

TEST_CASE("the same lines however the data is cut, at every offset") {
  const std::string data = "alpha\r\nbeta\n\ngamma delta\r\n\r\nx\n\0zz\r\nlast\r"s;
  const lines whole = split(data);
  REQUIRE(whole == lines{"alpha", "beta", "", "gamma delta", "", "x", "\0zz"s, "last\r"});
  for (std::size_t i = 0; i <= data.size(); ++i) {
    CAPTURE(i);
    CHECK(split(data, {i}) == whole);
    for (std::size_t j = i; j <= data.size(); ++j) {
      CAPTURE(j);
      CHECK(split(data, {i, j}) == whole);
    }
  }
  std::vector<std::size_t> every;
  for (std::size_t i = 1; i < data.size(); ++i) every.push_back(i);
  CHECK(split(data, every) == whole);  // one byte a chunk
}

TEST_CASE("the maximum line length: exactly the maximum passes, one byte more is ERR_SLUICE_LINE_TOO_LONG") {
  CHECK(split("12345\n", {}, 5) == lines{"12345"});
  CHECK(split("12345\r\n", {}, 5) == lines{"12345"});  // the "\r\n" does not count
  CHECK(split("12345", {}, 5) == lines{"12345"});
  CHECK(split("ok\n123456\nnever\n", {}, 5) == lines{"ok", too_long});
  CHECK(split("123456", {}, 5) == lines{too_long});
  CHECK(split("12345\r", {}, 5) == lines{too_long});  // a last line keeps its "\r"
  // The same across chunks, at every cut.
  const std::string data = "ab\n12345\r\n1234\n123456\n";
  for (std::size_t i = 0; i <= data.size(); ++i) {
    CAPTURE(i);
    CHECK(split(data, {i}, 5) == lines{"ab", "12345", "1234", too_long});
  }
}

TEST_CASE("a too long line is found before its end arrives: memory stays bounded") {
  line_splitter s(100);
  std::error_code ec;
  const std::string big(10000, 'x');
  s.feed(big);
  CHECK(!s.next(ec));
  CHECK(ec == errc::line_too_long);
  CHECK(s.failed());

  line_splitter t(100);
  ec.clear();
  const std::string piece(60, 'y');
  t.feed(piece);
  CHECK(!t.next(ec));
  CHECK(!ec);  // 60 bytes: maybe fine
  t.feed(piece);
  CHECK(!t.next(ec));
  CHECK(ec == errc::line_too_long);  // 120 bytes without an end: too long already
}

TEST_CASE("after an error the splitter yields nothing more, until reset()") {
  line_splitter s(3);
  std::error_code ec;
  s.feed("abcd\nok\n");
  CHECK(!s.next(ec));
  CHECK(ec == errc::line_too_long);
  ec.clear();
  CHECK(!s.next(ec));
  CHECK(ec == errc::line_too_long);
  ec.clear();
  CHECK(!s.finish(ec));
  CHECK(ec == errc::line_too_long);
  s.reset();
  ec.clear();
  s.feed("ok\n");
  const auto line = s.next(ec);
  REQUIRE(line);
  CHECK(*line == "ok");
  CHECK(!ec);
}

TEST_CASE("a line inside one chunk is a view into the chunk; only a straddling line is copied") {
  const std::string chunk1 = "first\nsecond\r\nthi";
  const std::string chunk2 = "rd\nfourth\n";
  line_splitter s;
  std::error_code ec;
  auto inside = [](std::string_view line, const std::string& chunk) {
    return line.data() >= chunk.data() && line.data() + line.size() <= chunk.data() + chunk.size();
  };
  s.feed(chunk1);
  auto l1 = s.next(ec);
  REQUIRE(l1);
  CHECK(*l1 == "first");
  CHECK(l1->data() == chunk1.data());
  auto l2 = s.next(ec);
  REQUIRE(l2);
  CHECK(*l2 == "second");
  CHECK(inside(*l2, chunk1));
  CHECK(!s.next(ec));
  CHECK(s.copied_lines() == 0);
  s.feed(chunk2);
  auto l3 = s.next(ec);
  REQUIRE(l3);
  CHECK(*l3 == "third");
  CHECK(!inside(*l3, chunk2));
  CHECK(s.copied_lines() == 1);
  auto l4 = s.next(ec);
  REQUIRE(l4);
  CHECK(*l4 == "fourth");
  CHECK(inside(*l4, chunk2));
  CHECK(!s.next(ec));
  CHECK(!s.finish(ec));
  CHECK(!ec);
  CHECK(s.copied_lines() == 1);
}

// ---- line_reader over an fd

static_assert(std::input_iterator<line_reader::iterator>);
static_assert(std::sentinel_for<std::default_sentinel_t, line_reader::iterator>);

TEST_CASE("line_reader gives a file's lines, with a buffer of any size") {
  std::string data;
  lines expected;
  std::mt19937 gen(42);
  for (int i = 0; i < 300; ++i) {
    std::string line(gen() % 40, 'a');
    for (char& c : line) c = static_cast<char>('a' + gen() % 26);
    if (i % 17 == 0) line.clear();
    expected.push_back(line);
    data += line + (i % 3 == 0 ? "\r\n" : "\n");
  }
  data += "tail";
  expected.push_back("tail");
  temp_file f(data);
  for (std::size_t buffer : {1, 2, 3, 7, 16, 41, 64, 1000, 256 * 1024}) {
    CAPTURE(buffer);
    open_fd fd(f.path);
    CHECK(read_lines(fd.fd, {.buffer_size = buffer}) == expected);
  }
}

TEST_CASE("line_reader reads only when its buffer runs out, and copies no line inside one read") {
  std::string data;
  for (int i = 0; i < 10000; ++i) data += "line " + std::to_string(i) + "\n";
  temp_file f(data);
  SUBCASE("one big read") {
    open_fd fd(f.path);
    line_reader r(fd.fd);
    std::size_t n = 0;
    for (std::string_view line : r) n += !line.empty();
    CHECK(n == 10000);
    CHECK(!r.error());
    CHECK(r.lines() == 10000);
    CHECK(r.syscalls() == 2);  // the data, then the end
    CHECK(r.splitter().copied_lines() == 0);
  }
  SUBCASE("small reads: one read per buffer, a copy only where a line straddles two") {
    open_fd fd(f.path);
    line_reader r(fd.fd, {.buffer_size = 4096});
    std::size_t n = 0;
    for (std::string_view line : r) n += !line.empty();
    CHECK(n == 10000);
    CHECK(r.syscalls() == (data.size() + 4095) / 4096 + 1);
    CHECK(r.splitter().copied_lines() <= data.size() / 4096 + 1);
    CHECK(r.bytes_read() == data.size());
  }
}

TEST_CASE("line_reader over a pipe whose data arrives in pieces") {
  std::string data;
  for (int i = 0; i < 2000; ++i) data += "piece " + std::to_string(i) + (i % 2 ? "\r\n" : "\n");
  const lines expected = split(data);
  for (bool nonblocking : {false, true}) {
    CAPTURE(nonblocking);
    pipe_fds p;
    if (nonblocking) REQUIRE(::fcntl(p.r, F_SETFL, ::fcntl(p.r, F_GETFL) | O_NONBLOCK) == 0);
    std::thread writer([&] {
      for (std::size_t off = 0; off < data.size(); off += 777) {
        const std::string_view piece = std::string_view(data).substr(off, 777);
        REQUIRE(::write(p.w, piece.data(), piece.size()) == static_cast<ssize_t>(piece.size()));
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      p.close_w();
    });
    const lines got = read_lines(p.r);
    writer.join();
    CHECK(got == expected);
  }
}

TEST_CASE("line_reader reports a read error and then stays ended") {
  SUBCASE("EISDIR") {
    temp_file f("");
    open_fd fd(f.dir);
    line_reader r(fd.fd);
    std::error_code ec;
    CHECK(!r.next(ec));
    CHECK(ec == std::error_code(EISDIR, std::system_category()));
    ec.clear();
    CHECK(!r.next(ec));
    CHECK(ec == std::error_code(EISDIR, std::system_category()));
    CHECK(r.error() == ec);
  }
  SUBCASE("EBADF: a closed fd") {
    int bad;
    {
      pipe_fds p;
      bad = p.r;
    }
    CHECK(read_lines(bad) == lines{"!EBADF"});
  }
}

TEST_CASE("line_reader: a line too long ends the lines with ERR_SLUICE_LINE_TOO_LONG and counts those before") {
  temp_file f("short\nalso short\n" + std::string(5000, 'x') + "\nnever\n");
  for (std::size_t buffer : {std::size_t{7}, std::size_t{256 * 1024}}) {
    CAPTURE(buffer);
    open_fd fd(f.path);
    line_reader r(fd.fd, {.max_line_length = 100, .buffer_size = buffer});
    std::vector<std::string> got;
    for (std::string_view line : r) got.emplace_back(line);
    CHECK(got == lines{"short", "also short"});
    CHECK(r.error() == errc::line_too_long);
    CHECK(r.lines() == 2);  // the long one is line 3
  }
}

TEST_CASE("line_reader on an empty file and on a file of one newline") {
  {
    temp_file f("");
    open_fd fd(f.path);
    CHECK(read_lines(fd.fd) == lines{});
  }
  {
    temp_file f("\n");
    open_fd fd(f.path);
    CHECK(read_lines(fd.fd) == lines{""});
  }
}

// ---- count_newlines, line_counter and count_lines: the count alone

namespace {

// What line_splitter says of `data`, cut at `cuts`: its count of lines, and
// whether a line was too long (the count is then of the lines before it).
struct expected_count {
  std::size_t lines;
  bool too_long;
};
expected_count splitter_count(std::string_view data, const std::vector<std::size_t>& cuts, std::size_t max) {
  lines got = split(data, cuts, max);
  const bool failed = !got.empty() && got.back() == too_long;
  return {got.size() - failed, failed};
}

// line_counter over `data` cut at `cuts`, each chunk its own copy.
expected_count counter_count(std::string_view data, const std::vector<std::size_t>& cuts, std::size_t max) {
  line_counter c(max);
  std::error_code ec;
  std::size_t from = 0;
  std::vector<std::size_t> ends = cuts;
  ends.push_back(data.size());
  bool ok = true;
  for (std::size_t to : ends) {
    const std::string chunk(data.substr(from, to - from));
    ok = c.feed(chunk, ec);
    if (!ok) break;
    from = to;
  }
  if (ok) ok = c.finish(ec);
  CHECK(ok == !ec);
  if (ec) CHECK(ec == errc::line_too_long);
  return {c.lines(), !ok};
}

std::size_t newlines_plus_last(std::string_view data) {
  return static_cast<std::size_t>(std::count(data.begin(), data.end(), '\n')) +
         (!data.empty() && data.back() != '\n');
}

}  // namespace

TEST_CASE("count_newlines: every loop counts every \"\\n\", at every length and alignment") {
  std::mt19937 gen(7);
  // Past 255 vectors of newlines the byte counters would wrap if not added
  // up in time: 20,000 newlines in a row, and mixed data of every length
  // up to 600 from every offset up to 40.
  std::string data(20000, '\n');
  for (int i = 0; i < 20000; ++i) data += gen() % 5 == 0 ? '\n' : static_cast<char>(gen() % 256);
  std::vector<std::string> kernels = {"memchr", "sse2", "avx2"};
  int tried = 0;
  for (const std::string& name : kernels) {
    const detail::newline_counter count = detail::newline_counter_named(name);
    if (!count) continue;
    ++tried;
    CAPTURE(name);
    for (std::size_t offset : {std::size_t{0}, std::size_t{20000}, std::size_t{20001}})
      CHECK(count(data.data() + offset, data.size() - offset) ==
            static_cast<std::size_t>(std::count(data.begin() + static_cast<std::ptrdiff_t>(offset), data.end(), '\n')));
    for (std::size_t offset = 0; offset < 40; ++offset)
      for (std::size_t n = 0; n < 600; ++n) {
        const char* p = data.data() + 20000 + offset;
        const auto want = static_cast<std::size_t>(std::count(p, p + n, '\n'));
        if (count(p, n) != want) {
          CAPTURE(offset);
          CAPTURE(n);
          CHECK(count(p, n) == want);
        }
      }
  }
  CHECK(tried >= 1);
  CHECK(count_newlines(data) == static_cast<std::size_t>(std::count(data.begin(), data.end(), '\n')));
  CHECK(count_newlines("") == 0);
}

TEST_CASE("line_counter counts what line_splitter splits, however the data is cut, the maximum too") {
  // Lines of 0-24 bytes, some ending "\r\n", some with a lone "\r", and
  // maximum lengths around those sizes: the counter must find the same
  // long line as the splitter (a "\r" before "\n" not counted, one last in
  // the data counted) and count the same lines before it.
  std::mt19937 gen(11);
  for (int round = 0; round < 400; ++round) {
    std::string data;
    const int n = static_cast<int>(gen() % 30);
    for (int i = 0; i < n; ++i) {
      std::string line(gen() % 25, 'a');
      for (char& c : line) c = gen() % 9 == 0 ? '\r' : static_cast<char>('a' + gen() % 26);
      data += line;
      data += gen() % 3 == 0 ? "\r\n" : "\n";
    }
    if (gen() % 2) data += std::string(gen() % 25, 't') + (gen() % 4 == 0 ? "\r" : "");
    std::vector<std::size_t> cuts;
    for (std::size_t at = 0; !data.empty() && (at += 1 + gen() % 40) < data.size();) cuts.push_back(at);
    for (std::size_t max : {std::size_t{1}, std::size_t{3}, std::size_t{10}, std::size_t{20}, std::size_t{24},
                            line_options{}.max_line_length}) {
      CAPTURE(round);
      CAPTURE(max);
      CAPTURE(data);
      const expected_count want = splitter_count(data, cuts, max);
      const expected_count got = counter_count(data, cuts, max);
      CHECK(got.lines == want.lines);
      CHECK(got.too_long == want.too_long);
      // And in one chunk, and one byte at a time.
      std::vector<std::size_t> every;
      for (std::size_t at = 1; at < data.size(); ++at) every.push_back(at);
      CHECK(counter_count(data, {}, max).lines == want.lines);
      CHECK(counter_count(data, every, max).lines == want.lines);
    }
  }
}

TEST_CASE("line_counter: the maximum line length, exactly") {
  const std::string ten = "0123456789";
  CHECK(counter_count(ten + "\n", {}, 10).too_long == false);
  CHECK(counter_count(ten + "\r\n", {}, 10).too_long == false);    // "\r\n" is not part of the line
  CHECK(counter_count(ten + "\r\n", {11}, 10).too_long == false);  // nor when the chunk ends between them
  CHECK(counter_count(ten + "a\n", {}, 10).too_long == true);
  CHECK(counter_count(ten + "a\n", {11}, 10).too_long == true);
  CHECK(counter_count(ten + "\r", {}, 10).too_long == true);  // last, without "\n", the "\r" is a byte
  CHECK(counter_count(ten, {}, 10).too_long == false);
  CHECK(counter_count(ten, {}, 10).lines == 1);
  // A long line between two short ones inside one chunk, and its number.
  const expected_count c = counter_count("a\nb\n" + ten + ten + "\nc\nd\n", {}, 10);
  CHECK(c.too_long);
  CHECK(c.lines == 2);
}

TEST_CASE("line_counter: a too long line is found before its end arrives") {
  line_counter c(100);
  std::error_code ec;
  const std::string piece(60, 'x');
  CHECK(c.feed("one\n" + piece, ec));
  CHECK(!c.feed(piece, ec));  // 120 bytes and no end yet: too long already
  CHECK(ec == errc::line_too_long);
  CHECK(c.lines() == 1);
  ec.clear();
  CHECK(!c.feed("\n", ec));  // and it stays failed
  CHECK(ec == errc::line_too_long);
  ec.clear();
  CHECK(!c.finish(ec));
  CHECK(ec == errc::line_too_long);
}

TEST_CASE("count_lines over files whose sizes fall around its reads' boundaries") {
  // A file of B - 1, B, B + 1, 2B... bytes for a read size of B, with a
  // newline last, first or in the middle of a block, and without a final
  // newline: count_lines says what line_splitter does (its newlines, and
  // one more for bytes after the last).
  for (std::size_t buffer : {std::size_t{16}, std::size_t{4096}, std::size_t{128 * 1024}}) {
    for (std::size_t size : {buffer - 1, buffer, buffer + 1, 2 * buffer - 1, 2 * buffer, 2 * buffer + 1, 3 * buffer + 7}) {
      for (int shape = 0; shape < 4; ++shape) {
        std::string data(size, 'x');
        for (std::size_t i = 0; i < size; ++i) {
          if (shape == 0 && i % buffer == buffer - 1) data[i] = '\n';  // last byte of each read
          if (shape == 1 && i % buffer == 0) data[i] = '\n';           // first byte of each read
          if (shape == 2 && i % 13 == 12) data[i] = '\n';
          if (shape == 3 && i % 9 == 0) data[i] = '\n';  // and never at the end: a last line without one
        }
        if (shape != 3) data.back() = '\n';
        if (shape == 3 && data.back() == '\n') data.back() = 'x';
        CAPTURE(buffer);
        CAPTURE(size);
        CAPTURE(shape);
        temp_file f(data);
        open_fd fd(f.path);
        std::error_code ec;
        CHECK(count_lines(fd.fd, ec, {.buffer_size = buffer}) == newlines_plus_last(data));
        CHECK(!ec);
      }
    }
  }
  temp_file empty("");
  open_fd fd(empty.path);
  std::error_code ec;
  CHECK(count_lines(fd.fd, ec) == 0);
  CHECK(!ec);
  temp_file one("\n");
  open_fd fd1(one.path);
  CHECK(count_lines(fd1.fd, ec) == 1);
  temp_file no_newline("a\nb");
  open_fd fd2(no_newline.path);
  CHECK(count_lines(fd2.fd, ec) == 2);  // as line_splitter, one more than wc -l
  CHECK(!ec);
}

TEST_CASE("count_lines over a pipe whose data arrives in pieces, blocking or not") {
  std::string data;
  for (int i = 0; i < 3000; ++i) data += "piece " + std::to_string(i) + (i % 2 ? "\r\n" : "\n");
  data += "last, without a newline";
  for (bool nonblocking : {false, true}) {
    CAPTURE(nonblocking);
    pipe_fds p;
    if (nonblocking) REQUIRE(::fcntl(p.r, F_SETFL, ::fcntl(p.r, F_GETFL) | O_NONBLOCK) == 0);
    std::thread writer([&] {
      for (std::size_t off = 0; off < data.size(); off += 777) {
        const std::string_view piece = std::string_view(data).substr(off, 777);
        if (::write(p.w, piece.data(), piece.size()) != static_cast<ssize_t>(piece.size())) break;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      p.close_w();
    });
    std::error_code ec;
    const std::size_t n = count_lines(p.r, ec, {.buffer_size = 1000});
    writer.join();
    CHECK(n == 3001);
    CHECK(!ec);
  }
}

TEST_CASE("count_lines: a read error, and a line too long with the count of those before it") {
  {
    temp_file f("");
    open_fd fd(f.dir);
    std::error_code ec;
    CHECK(count_lines(fd.fd, ec) == 0);
    CHECK(ec == std::error_code(EISDIR, std::system_category()));
  }
  temp_file f("short\nalso short\n" + std::string(5000, 'x') + "\nnever\n");
  for (std::size_t buffer : {std::size_t{7}, std::size_t{256 * 1024}}) {
    CAPTURE(buffer);
    open_fd fd(f.path);
    std::error_code ec;
    CHECK(count_lines(fd.fd, ec, {.max_line_length = 100, .buffer_size = buffer}) == 2);
    CHECK(ec == errc::line_too_long);
  }
  // An endless line from a pipe that stays open: the count ends without
  // waiting for more. (The pipe closes after 3 s, so that a count that
  // waits for the end fails this test rather than hangs it.)
  pipe_fds p;
  const std::string piece(4096, 'y');
  REQUIRE(::write(p.w, "1\n2\n", 4) == 4);
  REQUIRE(::write(p.w, piece.data(), piece.size()) == static_cast<ssize_t>(piece.size()));
  const auto close_after = std::chrono::seconds(3 * sluice::test::time_scale());
  std::thread closer([&] {
    std::this_thread::sleep_for(close_after);
    p.close_w();
  });
  const auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  CHECK(count_lines(p.r, ec, {.max_line_length = 1000, .buffer_size = 512}) == 2);
  CHECK(std::chrono::steady_clock::now() - t0 < close_after);
  CHECK(ec == errc::line_too_long);
  closer.join();
}

// ---- count_lines_mapped: a regular file mapped, not read

TEST_CASE("count_lines_mapped over files whose sizes fall around its windows and pieces, from any offset") {
  // Mapped in 4 MiB windows from 1 MiB up, fed in 1 MiB pieces (the default
  // maximum line length); a newline last or first in each window, every 13
  // bytes, or never at the end. Each count must be line_splitter's, and the
  // fd's offset must end at the end, as after read()s.
  constexpr std::size_t mib = 1024 * 1024;
  constexpr std::size_t window = 4 * mib;
  for (std::size_t size : {mib - 1, mib, window - 1, window, window + 1, 2 * window + 7}) {
    for (int shape = 0; shape < 4; ++shape) {
      std::string data(size, 'x');
      for (std::size_t i = 0; i < size; ++i) {
        if (shape == 0 && i % window == window - 1) data[i] = '\n';
        if (shape == 1 && i % window == 0) data[i] = '\n';
        if ((shape == 0 || shape == 1) && i % 1000 == 999) data[i] = '\n';  // lines shorter than the maximum
        if (shape == 2 && i % 13 == 12) data[i] = '\n';
        if (shape == 3 && i % 9 == 0) data[i] = '\n';
      }
      if (shape != 3) data.back() = '\n';
      if (shape == 3 && data.back() == '\n') data.back() = 'x';
      temp_file f(data);
      for (std::size_t offset : {std::size_t{0}, std::size_t{4096}, std::size_t{5000}}) {
        CAPTURE(size);
        CAPTURE(shape);
        CAPTURE(offset);
        open_fd fd(f.path);
        REQUIRE(::lseek(fd.fd, static_cast<off_t>(offset), SEEK_SET) == static_cast<off_t>(offset));
        std::error_code ec;
        CHECK(count_lines_mapped(fd.fd, ec, {.buffer_size = 64 * 1024}) ==
              newlines_plus_last(std::string_view(data).substr(offset)));
        CHECK(!ec);
        CHECK(::lseek(fd.fd, 0, SEEK_CUR) == static_cast<off_t>(size));
      }
    }
  }
}

TEST_CASE("count_lines_mapped: a line too long, in a window or across two, ends the count with those before it") {
  // 3,000 short lines, then the long one, across the first window's end
  // for the default maximum.
  std::string head;
  for (int i = 0; i < 3000; ++i) head += "line " + std::to_string(i) + "\n";
  {
    temp_file f(head + std::string(5000, 'x') + "\n" + std::string(2 * 1024 * 1024, 'y') + "\n");
    open_fd fd(f.path);
    std::error_code ec;
    CHECK(count_lines_mapped(fd.fd, ec, {.max_line_length = 100, .buffer_size = 64 * 1024}) == 3000);
    CHECK(ec == errc::line_too_long);
  }
  {
    std::string data = head + std::string(4 * 1024 * 1024 - head.size() - 100, 'z') + "\n";  // ends in the first window
    data += std::string(1024 * 1024 + 1, 'w') + "\nafter\n";  // 1 MiB + 1: too long, across the window's end
    temp_file f(data);
    open_fd fd(f.path);
    std::error_code ec;
    CHECK(count_lines_mapped(fd.fd, ec) == 3000);  // the 'z' line is longer than 1 MiB too
    CHECK(ec == errc::line_too_long);
  }
  {
    std::string data = head + std::string(1024 * 1024, 'z') + "\r\n";  // exactly the maximum, with "\r\n"
    data += std::string(2 * 1024 * 1024, '\n');
    temp_file f(data);
    open_fd fd(f.path);
    std::error_code ec;
    CHECK(count_lines_mapped(fd.fd, ec) == 3001 + 2 * 1024 * 1024);
    CHECK(!ec);
  }
}

TEST_CASE("count_lines_mapped reads what it cannot map: a pipe, a small file, a directory") {
  std::string data;
  for (int i = 0; i < 300000; ++i) data += "piece " + std::to_string(i) + "\n";  // 3.6 MB
  pipe_fds p;
  std::thread writer([&] {
    for (std::size_t off = 0; off < data.size(); off += 65536) {
      const std::string_view piece = std::string_view(data).substr(off, 65536);
      if (::write(p.w, piece.data(), piece.size()) != static_cast<ssize_t>(piece.size())) break;
    }
    p.close_w();
  });
  std::error_code ec;
  CHECK(count_lines_mapped(p.r, ec) == 300000);
  writer.join();
  CHECK(!ec);
  temp_file small("a\nb\nc");
  open_fd fd(small.path);
  CHECK(count_lines_mapped(fd.fd, ec) == 3);
  CHECK(!ec);
  open_fd dir(small.dir);
  CHECK(count_lines_mapped(dir.fd, ec) == 0);
  CHECK(ec == std::error_code(EISDIR, std::system_category()));
}

TEST_CASE("feed_mapped: a file truncated under its mapping is a SIGBUS caught, the counter left as it was") {
  constexpr std::size_t size = 2 * 1024 * 1024;
  std::string data(size, 'x');
  for (std::size_t i = 99; i < size; i += 100) data[i] = '\n';
  temp_file f(data);
  const int fd = ::open(f.path.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  REQUIRE(map != MAP_FAILED);
  const std::string_view mapped(static_cast<const char*>(map), size);
  struct sigaction before {};
  REQUIRE(::sigaction(SIGBUS, nullptr, &before) == 0);

  line_counter c;
  std::error_code ec;
  REQUIRE(c.feed("one\ntwo\nthr", ec));
  REQUIRE(c.lines() == 2);
  // Whole, the mapping counts: one line ends "thr...", then the rest.
  line_counter whole = c;
  CHECK(detail::feed_mapped(whole, mapped, 64 * 1024, ec) == detail::mapped_feed::ok);
  CHECK(whole.lines() == 2 + size / 100);
  // Cut to one page, the pages past it raise SIGBUS when read.
  REQUIRE(::ftruncate(fd, 4096) == 0);
  CHECK(detail::feed_mapped(c, mapped, 64 * 1024, ec) == detail::mapped_feed::faulted);
  CHECK(!ec);
  CHECK(c.lines() == 2);
  REQUIRE(c.feed("ee\n", ec));
  CHECK(c.lines() == 3);  // "three": the counter goes on as if the window never came

  // The handler that was there before is back, and a SIGBUS outside a count
  // still does what it did: here, the default, which ends the process.
  struct sigaction after {};
  REQUIRE(::sigaction(SIGBUS, nullptr, &after) == 0);
  CHECK((after.sa_handler == before.sa_handler));
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGBUS, SIG_DFL);
    line_counter again;
    std::error_code child_ec;
    (void)detail::feed_mapped(again, mapped, 64 * 1024, child_ec);  // installs and removes its handler
    volatile char byte = mapped[size - 1];                              // faults, with no count to go back to
    (void)byte;
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGBUS);
  ::munmap(map, size);
  ::close(fd);
}

// ---- for_each_line over a readable

TEST_CASE("for_each_line: the lines of every chunk, however cut, then done(ok) once") {
  const std::string data = "alpha\r\nbeta\n\ngam";
  const std::string rest = "ma\r\nlast";
  line_run run({data, rest});
  run.start();
  run.l.run();
  CHECK(run.got == lines{"alpha", "beta", "", "gamma", "last"});
  CHECK(run.done == std::vector<std::error_code>{{}});
  CHECK(run.events == std::vector<std::string>{"end", "close"});

  // One byte a chunk.
  std::vector<std::string> bytes;
  for (char c : data + rest) bytes.emplace_back(1, c);
  line_run slow(bytes);
  slow.start();
  slow.l.run();
  CHECK(slow.got == run.got);
  CHECK(slow.done.size() == 1);
}

TEST_CASE("for_each_line: a line inside one chunk is a view into it") {
  line_run run({"one\ntwo\nthr", "ee\n"});
  std::vector<bool> inside;
  const auto& chunks = run.src->chunks();
  run.start([&](std::string_view line) {
    bool in = false;
    for (const std::string& c : chunks)
      in = in || (line.data() >= c.data() && line.data() + line.size() <= c.data() + c.size());
    inside.push_back(in);
  });
  run.l.run();
  CHECK(inside == std::vector<bool>{true, true, false});
}

TEST_CASE("for_each_line over a file readable") {
  std::string data;
  for (int i = 0; i < 50000; ++i) data += "request id=" + std::to_string(i) + "\n";
  temp_file f(data);
  loop l;
  auto r = make_file_readable(f.path.string(), on_loop(l));
  std::size_t n = 0;
  bool ordered = true;
  int done_calls = 0;
  for_each_line(
      *r,
      [&](std::string_view line) {
        ordered = ordered && line == "request id=" + std::to_string(n);
        ++n;
      },
      [&](std::error_code ec) {
        CHECK(!ec);
        ++done_calls;
      });
  l.run();
  CHECK(n == 50000);
  CHECK(ordered);
  CHECK(done_calls == 1);
}

TEST_CASE("for_each_line: a too long line gives done(ERR_SLUICE_LINE_TOO_LONG) and destroys the stream quietly") {
  line_run run({"ok\n", std::string(50, 'x'), std::string(60, 'x') + "\n", "never\n"});
  bool error_event = false;
  run.r->on(event::error, [&](std::error_code) { error_event = true; });
  run.start({.max_line_length = 100});
  run.l.run();
  CHECK(run.got == lines{"ok"});
  CHECK(run.done == std::vector<std::error_code>{make_error_code(errc::line_too_long)});
  CHECK(run.r->destroyed());
  CHECK(!error_event);
  CHECK(run.events == std::vector<std::string>{"close"});
}

TEST_CASE("for_each_line: fn returning false stops the lines, done(ok), the stream destroyed") {
  line_run run({"a\nb\nc\n", "d\n"});
  run.start([&](std::string_view line) {
    run.got.emplace_back(line);
    return line != "b";
  });
  run.l.run();
  CHECK(run.got == lines{"a", "b"});
  CHECK(run.done == std::vector<std::error_code>{{}});
  CHECK(run.r->destroyed());
}

TEST_CASE("for_each_line: memory that runs out (fn throws bad_alloc) gives done(ENOMEM) and destroys the stream") {
  // "b" in a chunk's lines, then "b" as the last line, at the end.
  for (const auto& chunks : {std::vector<std::string>{"a\nb\nc\n", "d\n"}, std::vector<std::string>{"a\nb"}}) {
    CAPTURE(chunks.size());
    line_run run(chunks);
    run.start([&](std::string_view line) {
      if (line == "b") throw std::bad_alloc();
      run.got.emplace_back(line);
    });
    run.l.run();
    CHECK(run.got == lines{"a"});
    CHECK(run.done == std::vector<std::error_code>{std::make_error_code(std::errc::not_enough_memory)});
    CHECK(run.r->destroyed());
  }
}

TEST_CASE("for_each_line: the stream's error reaches done, once") {
  const std::error_code eio(EIO, std::system_category());
  line_run run({"a\nb"}, eio);
  run.start();
  run.l.run();
  CHECK(run.got == lines{"a"});  // "b" never ended
  CHECK(run.done == std::vector<std::error_code>{eio});
}

TEST_CASE("for_each_line: a stream destroyed without an error gives ERR_STREAM_PREMATURE_CLOSE") {
  line_run run({"a\n", "b\n", "c\n"});
  run.start([&](std::string_view line) {
    run.got.emplace_back(line);
    if (line == "b") run.r->destroy();
  });
  run.l.run();
  CHECK(run.got == lines{"a", "b"});
  CHECK(run.done == std::vector<std::error_code>{make_error_code(errc::premature_close)});
}

TEST_CASE("for_each_line on a stream that is already over answers on the next tick") {
  SUBCASE("ended") {
    line_run run({"a\n"});
    run.r->resume();
    run.l.run();
    REQUIRE(run.r->readable_ended());
    run.start();
    CHECK(run.done.empty());  // never synchronously
    run.l.run();
    CHECK(run.done == std::vector<std::error_code>{{}});
  }
  SUBCASE("destroyed") {
    line_run run({"a\n"});
    run.r->destroy();
    run.start();
    run.l.run();
    CHECK(run.done == std::vector<std::error_code>{make_error_code(errc::premature_close)});
    CHECK(run.got.empty());
  }
}

TEST_CASE("for_each_line: deleting the readable before the end still calls done, once") {
  line_run run({"a\n", "b\n", "c"}, {}, true);
  run.start();
  run.l.run_until_idle();
  CHECK(run.got == lines{"a", "b"});
  CHECK(run.done.empty());
  run.r.reset();
  CHECK(run.done == std::vector<std::error_code>{make_error_code(errc::premature_close)});
  run.l.run();
  CHECK(run.done.size() == 1);
}

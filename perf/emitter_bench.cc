// emitter_bench: what one emit() costs next to the calls it replaces.
//
// Every case calls a listener that increments a counter, through a call the
// compiler cannot see through (the callable escapes before the loop), so each
// case pays exactly its dispatch. One line per case:
//
//   emitter  case=<name> listeners=<n>  ns/op=<best of N>  vs_std_function=<ratio>
//
// The goal line compares one-listener emit(drain) with a direct call through
// std::function<void()>: within 1.3x.
#include <boost/signals2/signal.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench.h"
#include "sluice/loop/emitter.h"
#include "sluice/base/function.h"

namespace {

using sluice::event;

struct result_row {
  std::string name;
  int listeners;
  std::size_t index;  // into the timed cases
};

}  // namespace

int main(int argc, char** argv) {
  const auto opt = bench::options::parse(argc, argv);

  // Counters live on the heap and are read at the end, so no increment can be
  // dropped; each case has its own so the totals can be checked.
  std::vector<std::uint64_t> counters(16, 0);
  std::vector<std::uint64_t> expected(16, 0);
  std::vector<bench::timed_case> cases;
  std::vector<result_row> rows;

  auto add = [&](std::string name, int listeners, auto body) {
    std::size_t k = cases.size();
    cases.push_back({name, [body, k, listeners, &expected](std::uint64_t n) mutable {
                       body(n);
                       expected[k] += n * static_cast<std::uint64_t>(listeners);
                     }});
    rows.push_back({std::move(name), listeners, k});
    return k;
  };

  // 1. std::function<void()>: the baseline.
  {
    std::uint64_t* c = &counters[cases.size()];
    auto f = std::make_shared<std::function<void()>>([c] { ++*c; });
    bench::do_not_optimize(f.get());
    add("std::function", 1, [f](std::uint64_t n) {
      std::function<void()>& fn = *f;
      bench::do_not_optimize(&fn);
      for (std::uint64_t i = 0; i < n; ++i) fn();
    });
  }
  // 2. sluice::inline_function<void()>: the type emitter stores listeners in.
  {
    std::uint64_t* c = &counters[cases.size()];
    auto f = std::make_shared<sluice::inline_function<void()>>([c] { ++*c; });
    add("inline_function", 1, [f](std::uint64_t n) {
      sluice::inline_function<void()>& fn = *f;
      bench::do_not_optimize(&fn);
      for (std::uint64_t i = 0; i < n; ++i) fn();
    });
  }
  // 3. sluice::emitter with 0, 1 and 3 listeners on `drain`. emit(drain) is
  // what writable.cc calls; emit(drain, arg) reuses a prebuilt event_arg.
  std::size_t emit1 = 0;
  for (int listeners : {0, 1, 3}) {
    std::uint64_t* c = &counters[cases.size()];
    auto em = std::make_shared<sluice::emitter>();
    for (int l = 0; l < listeners; ++l) em->on(event::drain, [c] { ++*c; });
    // A listener on another event, as a stream has, must not slow drain down.
    em->on(event::error, [](std::error_code) {});
    std::size_t k = add("emit(drain)", listeners, [em](std::uint64_t n) {
      sluice::emitter& e = *em;
      bench::do_not_optimize(&e);
      for (std::uint64_t i = 0; i < n; ++i) e.emit(event::drain);
    });
    if (listeners == 1) emit1 = k;
  }
  {
    std::uint64_t* c = &counters[cases.size()];
    auto em = std::make_shared<sluice::emitter>();
    em->on(event::drain, [c] { ++*c; });
    add("emit(drain,arg)", 1, [em](std::uint64_t n) {
      sluice::emitter& e = *em;
      const sluice::event_arg arg{};
      bench::do_not_optimize(&e);
      bench::do_not_optimize(&arg);
      for (std::uint64_t i = 0; i < n; ++i) e.emit(event::drain, arg);
    });
  }
  // 4. boost::signals2 with 0, 1 and 3 slots.
  for (int listeners : {0, 1, 3}) {
    std::uint64_t* c = &counters[cases.size()];
    auto sig = std::make_shared<boost::signals2::signal<void()>>();
    for (int l = 0; l < listeners; ++l) sig->connect([c] { ++*c; });
    add("boost::signals2", listeners, [sig](std::uint64_t n) {
      auto& s = *sig;
      bench::do_not_optimize(&s);
      for (std::uint64_t i = 0; i < n; ++i) s();
    });
  }

  bench::run_interleaved(cases, opt);

  bool counts_ok = true;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    if (counters[k] != expected[k]) {
      std::fprintf(stderr, "emitter_bench: case %s ran %llu listener calls, expected %llu\n",
                   cases[k].name.c_str(), static_cast<unsigned long long>(counters[k]),
                   static_cast<unsigned long long>(expected[k]));
      counts_ok = false;
    }
  }

  const double base = cases[0].best_ns;
  std::printf("# emitter_bench: best of %d%s; ns per emit or call, one listener increments a counter\n",
              opt.reps, opt.quick ? " (quick)" : "");
  for (const auto& r : rows) {
    const auto& c = cases[r.index];
    std::printf("emitter  case=%-16s listeners=%d  ns/op=%7.2f  vs_std_function=%5.2fx\n", r.name.c_str(),
                r.listeners, c.best_ns, c.best_ns / base);
  }
  const double ratio = cases[emit1].best_ns / base;
  std::printf("goal: emit(drain) with one listener within 1.30x of std::function: %.2fns / %.2fns = %.2fx  %s\n",
              cases[emit1].best_ns, base, ratio, ratio <= 1.30 ? "PASS" : "MISS");
  return counts_ok ? 0 : 1;
}

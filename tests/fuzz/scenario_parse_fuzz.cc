// libFuzzer harness: sluice-trace's scenario parser alone. Any text must
// parse or be refused with a scenario_error naming a line of the text;
// nothing else may escape, nothing may crash.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trace/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(bytes), size);
  const auto lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  try {
    const auto steps = sluice_trace::parse_scenario(text);
    for (const auto& s : steps)
      if (s.line < 1 || s.line > lines || (!s.tick && !s.run)) std::abort();
  } catch (const sluice_trace::scenario_error& e) {
    if (e.line < 1 || e.line > lines || e.message.empty()) std::abort();
  }
  return 0;
}

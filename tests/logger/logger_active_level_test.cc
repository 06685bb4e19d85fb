// SLUICE_LOG_ACTIVE_LEVEL: the macros below it are removed at compile time,
// so their lines are not written even when the logger's level lets them,
// and their arguments are never evaluated.
#define SLUICE_LOG_ACTIVE_LEVEL SLUICE_LOG_LEVEL_WARN

#include "support/printers.h"

#include <string>

#include "sluice/log_file/log_writable.h"
#include "sluice/logger/logger.h"
#include "support/temp_dir.h"

using namespace sluice;

namespace {
int evaluations = 0;
int counted() { return ++evaluations; }
}  // namespace

TEST_CASE("SLUICE_LOG_ACTIVE_LEVEL warn: trace, debug and info are gone, warn and above stay") {
  sluice::test::temp_dir dir;
  const std::string path = dir.file("app.log");
  {
    logger lg([&] { return make_log_writable(path); }, {.level = log_level::trace, .pattern = "{level} {message}"});
    SLUICE_LOG_TRACE(lg, "{}", counted());
    SLUICE_LOG_DEBUG(lg, "{}", counted());
    SLUICE_LOG_INFO(lg, "{}", counted());
    SLUICE_LOG_WARN(lg, "{}", counted());
    SLUICE_LOG_ERROR(lg, "{}", counted());
    SLUICE_LOG_CRITICAL(lg, "{}", counted());
  }
  CHECK(evaluations == 3);
  CHECK(sluice::test::slurp(path) == "warn 1\nerror 2\ncritical 3\n");
}

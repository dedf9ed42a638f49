// clustersim: what will this training job do on that cluster?
#include <CLI/CLI.hpp>

#include <iostream>

#include "tools/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "clustersim: discrete-event simulator of GPU training clusters (SimGrid). Predicts step "
      "time, MFU, tokens/s/GPU and where the time goes for a model, a parallelism and a cluster."};
  app.require_subcommand(1);
  int exit_code = 0;
  clustersim::tools::register_run_command(app, exit_code);
  clustersim::tools::register_platform_command(app, exit_code);
  clustersim::tools::register_trace_command(app, exit_code);
  clustersim::tools::register_tco_command(app, exit_code);
  clustersim::tools::register_memory_command(app, exit_code);
  clustersim::tools::register_validate_command(app, exit_code);
  clustersim::tools::register_scale_command(app, exit_code);
  clustersim::tools::register_sweep_command(app, exit_code);
  clustersim::tools::register_calib_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}

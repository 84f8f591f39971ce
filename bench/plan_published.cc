// The planner against published layouts (planner issue, Part B acceptance): for each config given
// (a published run: its layout, GPUs and global batch), the planner searches the same GPUs and
// global batch under one engine's rules, and this prints the published layout's simulated step
// (as the planner would run it: the engine's options applied), the planner's best, and the
// published layout's rank among the simulated plans. Run from the repository root:
//   ./build/bench/plan_published megatron tests/golden/data/table1/*.yaml
#include <cstdio>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "run/simulate.h"

namespace stagecraft {
namespace {

int Main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: plan_published ENGINE CONFIG...\n");
    return 2;
  }
  const auto parsed = ParseEngine(argv[1], "ENGINE");
  const Engine engine = parsed.ok() ? parsed.value() : Engine::kAny;
  if (engine == Engine::kAny) {
    std::fprintf(stderr, "plan_published: ENGINE is megatron, torchtitan or deepspeed\n");
    return 2;
  }
  std::printf("%-16s %6s  %-34s %12s %12s %8s  %s\n", "config", "gpus", "published layout",
              "published_ms", "best_ms", "rank", "best layout");
  for (int arg = 2; arg < argc; ++arg) {
    RunSpec run;
    run.config_path = argv[arg];
    auto resolved = ResolveRun(run);
    if (!resolved.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[arg], resolved.error().message.c_str());
      return 2;
    }
    const Config& config = resolved.value().config;
    const ParallelSpec& p = config.parallel;
    Candidate published;
    published.engine = engine;
    published.tp = p.tp;
    published.pp = p.pp;
    published.dp = p.dp;
    published.cp = p.cp;
    published.ep = p.ep;
    published.vpp = p.vpp;
    published.micro_batch_size = config.model.micro_batch_size;
    published.microbatches = p.microbatches;
    published.schedule = p.pp == 1 ? "1f1b" : config.schedule.name;
    published.recompute = p.recompute;
    published.zero_stage = p.distributed_optimizer ? 1 : p.zero_stage;
    auto simulated = SimulateSpec(CandidateRun(run, published));
    PlanSpec spec;
    spec.run = run;
    spec.gpus = p.world_size();
    spec.global_batch = int64_t{p.dp} * config.model.micro_batch_size * p.microbatches;
    spec.engine = engine;
    spec.top = 1000;
    auto plan = PlanLayouts(spec);
    if (!plan.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[arg], plan.error().message.c_str());
      return 2;
    }
    std::string rank = "-";
    const std::vector<PlannedLayout>& plans = plan.value().plans;
    for (size_t index = 0; index < plans.size(); ++index) {
      const Candidate& c = plans[index].candidate;
      if (c.tp == published.tp && c.pp == published.pp && c.dp == published.dp &&
          c.cp == published.cp && c.vpp == published.vpp &&
          c.micro_batch_size == published.micro_batch_size && c.schedule == published.schedule &&
          c.recompute == published.recompute && c.zero_stage == published.zero_stage) {
        rank = std::to_string(index + 1);
        break;
      }
    }
    const std::string name = config.model.name;
    const std::string layout = "tp " + std::to_string(p.tp) + " pp " + std::to_string(p.pp) +
                               " vpp " + std::to_string(p.vpp) + " dp " + std::to_string(p.dp) +
                               " mbs " + std::to_string(config.model.micro_batch_size) + " " +
                               RecomputeName(p.recompute);
    const double published_ms = simulated.ok() ? simulated.value().metrics.makespan.ms() : -1;
    const double best_ms = plans.empty() ? -1 : plans.front().step.ms();
    std::printf("%-16s %6d  %-34s %12.1f %12.1f %8s  %s%s\n", name.c_str(), p.world_size(),
                layout.c_str(), published_ms, best_ms, rank.c_str(),
                plans.empty() ? "(none fits)" : plans.front().candidate.Describe().c_str(),
                simulated.ok() && !simulated.value().info.memory.fits ? "  [published: OVER]" : "");
  }
  return 0;
}

}  // namespace
}  // namespace stagecraft

int main(int argc, char** argv) { return stagecraft::Main(argc, argv); }

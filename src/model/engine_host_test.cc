#include "model/engine_host.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hardware/presets.h"
#include "model/transformer_kernels.h"

namespace stagecraft {
namespace {

// vTrain's GPT layer (hidden 1024, 16 heads, biases, LayerNorm, learned positions, the unfused
// attention core), with the host at 1 s a kernel so each pass's time is its kernel count.
TEST(EngineHostTest, KernelCountIsVtrainsGptLayer) {
  DeviceRates counting = ClusterFromPreset("a100").value().rates();
  counting.kernels.host_seconds_per_kernel = 1.0;
  TransformerSpec gpt;
  gpt.layers = 24;
  gpt.hidden = 1024;
  gpt.heads = 16;
  gpt.vocab = 50304;
  TransformerRun run;
  run.seq_len = 1024;
  run.recompute = Recompute::kFull;
  const LayerKernelTimes times = DecoderKernelTimes(gpt, run, counting, false);
  EXPECT_EQ(times.forward + times.input_grad + times.weight_grad, kGptLayerKernelsWithRecompute);
}

// The constant is the least-squares slope of iteration time against layer-microbatches,
// (m + pp - 1) · layers/pp, over the copied rows (tests/golden/data/vtrain-floor-h1024-mb1.csv).
TEST(EngineHostTest, MegatronDeepSpeedHostTimeIsVtrainsFloor) {
  std::ifstream in(std::string(STAGECRAFT_TESTS_DIR) + "/golden/data/vtrain-floor-h1024-mb1.csv");
  ASSERT_TRUE(in) << "test data missing";
  std::vector<double> x, y;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    std::vector<double> v;
    std::stringstream fields(line);
    for (std::string field; std::getline(fields, field, ',');) v.push_back(std::stod(field));
    ASSERT_EQ(v.size(), 11u) << line;
    const double gb = v[1], mb = v[2], layers = v[5], dp = v[8], pp = v[9];
    x.push_back((gb / (mb * dp) + pp - 1) * layers / pp);
    y.push_back(v[10] * 1e-3);
  }
  ASSERT_EQ(x.size(), 272u);
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / x.size(), my += y[i] / y.size();
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  EXPECT_NEAR(sxy / sxx, kMegatronDeepSpeedHostSecondsPerLayer, 0.0005e-3);
}

TEST(EngineHostTest, EnginesWithoutAMeasurementKeepTheDevicesRate) {
  KernelModel device;
  device.host_seconds_per_kernel = 7e-6;
  EXPECT_EQ(HostSecondsPerKernel(TrainingEngine::kUnstated, device), 7e-6);
  EXPECT_EQ(HostSecondsPerKernel(TrainingEngine::kTorchtitan, device), 7e-6);
  EXPECT_DOUBLE_EQ(HostSecondsPerKernel(TrainingEngine::kMegatronDeepSpeed, device), 3.459e-3 / 45);
}

}  // namespace
}  // namespace stagecraft

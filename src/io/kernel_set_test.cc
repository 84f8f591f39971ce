#include "io/kernel_set.h"

#include <gtest/gtest.h>

namespace stagecraft {
namespace {

constexpr const char* kHeader = "# source: s\n# measured: m\n";

// A GEMM row's FLOPs are 2·m·n·k·batch; its seconds the printed time, else the FLOPs at the
// printed rate.
TEST(KernelSetTest, GemmRowsGiveTheirTimeOrRate) {
  const std::string text = std::string(kHeader) +
                           "device,dtype,m,n,k,batch,tflops,time_us,library,timing,note\n"
                           "h100,bf16,1024,2048,4096,2,500,,cublas,kernel,rate\n"
                           "a100,fp16,256,256,256,1,,10.5,cublas,wall,time\n";
  auto parsed = ParseKernelSource(text, "dir/gemm-test.csv");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const KernelSource& source = parsed.value();
  EXPECT_EQ(source.name, "gemm-test");
  EXPECT_EQ(source.cite, "s");
  EXPECT_EQ(source.measured, "m");
  ASSERT_EQ(source.rows.size(), 2u);
  const KernelRow& rate = source.rows[0];
  EXPECT_EQ(rate.line, 4);
  EXPECT_DOUBLE_EQ(KernelRowFlops(KernelKind::kGemm, rate), 2.0 * 1024 * 2048 * 4096 * 2);
  EXPECT_DOUBLE_EQ(KernelRowSeconds(KernelKind::kGemm, rate),
                   2.0 * 1024 * 2048 * 4096 * 2 / 500e12);
  EXPECT_DOUBLE_EQ(KernelRowSeconds(KernelKind::kGemm, source.rows[1]), 10.5e-6);
  EXPECT_EQ(source.rows[1].timing, "wall");
}

// FlashAttention's count: 4·b·h·s·s_kv·d forward, half of it causal, 2.5x backward, 3.5x both.
TEST(KernelSetTest, AttentionRowsCountAsFlashAttentionDoes) {
  const std::string text =
      std::string(kHeader) +
      "device,dtype,impl,batch,heads,kv_heads,head_dim,seq,seq_kv,causal,pass,tflops,time_us,"
      "library,timing,note\n"
      "h100,bf16,flash2,2,16,16,128,8192,8192,true,forward,300,,fa2,kernel,\n"
      "h100,bf16,flash2,2,16,16,128,8192,8192,false,backward,300,,fa2,kernel,\n"
      "h100,bf16,flash2,2,16,8,128,8192,4096,false,forward_backward,300,,fa2,kernel,\n";
  auto parsed = ParseKernelSource(text, "attention-test.csv");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const std::vector<KernelRow>& rows = parsed.value().rows;
  ASSERT_EQ(rows.size(), 3u);
  const double full = 4.0 * 2 * 16 * 8192 * 8192 * 128;
  EXPECT_DOUBLE_EQ(KernelRowFlops(KernelKind::kAttention, rows[0]), full / 2);
  EXPECT_DOUBLE_EQ(KernelRowFlops(KernelKind::kAttention, rows[1]), 2.5 * full);
  EXPECT_DOUBLE_EQ(KernelRowFlops(KernelKind::kAttention, rows[2]), 3.5 * full / 2);
  EXPECT_EQ(rows[2].kv_heads, 8);
}

TEST(KernelSetTest, RowsOutOfTheSchemaAreErrorsWithTheirLine) {
  const std::string header =
      std::string(kHeader) + "device,dtype,m,n,k,batch,tflops,time_us,library,timing,note\n";
  const struct {
    const char* row;
    const char* expected;
  } cases[] = {
      {"h100,bf16,1,1,1,1,,,x,kernel,", "t.csv:4: neither tflops nor time_us"},
      {"h100,bf16,1,1,1,1,-3,,x,kernel,", "t.csv:4: column 'tflops': '-3' must be positive"},
      {"h100,bf16,1,1,1,1,nan,,x,kernel,", "column 'tflops': 'nan' is not a number"},
      {"h100,int8,1,1,1,1,1,,x,kernel,", "column 'dtype': unknown value 'int8'"},
      {"h100,bf16,1,1,1,1,1,,x,clock,", "column 'timing': unknown value 'clock'"},
      {"h100,bf16,3000000000,1,1,1,1,,x,kernel,", "column 'm': '3000000000' is not a whole"},
      {"h100,bf16,1,1,1,1,1e300,,x,kernel,", "column 'tflops': '1e300' is outside"},
      {"h100,bf16,1,1,1,1,,1e-320,x,kernel,", "column 'time_us': '1e-320' is outside"},
  };
  for (const auto& c : cases) {
    auto parsed = ParseKernelSource(header + c.row + "\n", "t.csv");
    ASSERT_FALSE(parsed.ok()) << c.row;
    EXPECT_NE(parsed.error().message.find(c.expected), std::string::npos) << parsed.error().message;
  }
  EXPECT_FALSE(ParseKernelSource(header, "t.csv").ok());  // no rows
  EXPECT_FALSE(ParseKernelSource("", "t.csv").ok());      // no header
}

}  // namespace
}  // namespace stagecraft

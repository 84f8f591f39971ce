#include "serve/explorer_search.h"

#include <gtest/gtest.h>

namespace stagecraft {
namespace {

TEST(ExplorerSearchTest, LengthTraceReadsVidursColumns) {
  // splitwise_*.csv's header: an arrival column first.
  auto rows = ParseLengthTrace(
      "# from somewhere\narrived_at,num_prefill_tokens,num_decode_tokens\n"
      "0.0,4808,10\r\n0.052,3180,8\n",
      "t.csv");
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows.value().size(), 2u);
  EXPECT_EQ(rows.value()[1].prompt, 3180);
  EXPECT_EQ(rows.value()[1].output, 8);
  auto plain = ParseLengthTrace("100,5\n", "t.csv");  // no header: prompt, output
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain.value()[0].output, 5);
  auto bad = ParseLengthTrace("num_prefill_tokens,num_decode_tokens\n100,5\n100,x\n", "t.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("t.csv:3: ", 0), 0u) << bad.error().message;
  EXPECT_FALSE(ParseLengthTrace("prompt,output\n1,1\n", "t.csv").ok());  // unknown header
  EXPECT_FALSE(ParseLengthTrace("# only a comment\n", "t.csv").ok());
  EXPECT_FALSE(ParseLengthTrace("0,5\n", "t.csv").ok());  // no prompt
}

// Vidur's cut (trace_request_length_generator.py): 4,000 + 200 tokens against 4,096 is 104 over;
// the prompt loses ceil(104 x 4000/4200) = 100, the output ceil(104 x 200/4200) = 5, leaving
// 3,900 + 195 = 4,095. Rows within the limit stay; at least one token of each is kept.
TEST(ExplorerSearchTest, CutsRequestsAsVidurDoes) {
  const std::vector<RequestLengths> cut =
      CutToMaxTokens({{4000, 200}, {3772, 54}, {1, 9000}}, 4096);
  EXPECT_EQ(cut[0].prompt, 3900);
  EXPECT_EQ(cut[0].output, 195);
  EXPECT_EQ(cut[1].prompt, 3772);
  EXPECT_EQ(cut[1].output, 54);
  EXPECT_EQ(cut[2].prompt, 1);
  EXPECT_LE(cut[2].prompt + cut[2].output, 4096);
}

ExplorerSearchSpec SmallSearch(const std::string& filter) {
  ExplorerSearchSpec spec;
  // One synthetic length table for every trace: chat-like prompts and outputs.
  std::vector<RequestLengths> rows;
  for (int64_t i = 0; i < 64; ++i) rows.push_back({200 + 37 * i, 20 + 5 * i});
  for (const ExplorerSpace::Trace& trace : spec.space.traces) {
    spec.traces[trace.name] = rows;
    spec.trace_sources[trace.name] = "synthetic";
  }
  spec.filter = filter;
  spec.requests = 200;
  return spec;
}

// A capacity is what its name says: the replica's share of it meets the P99 delay bound, and
// the search's next doubling does not. A faster device serves more of the same configuration.
TEST(ExplorerSearchTest, CapacityMeetsTheDelayBoundAndFasterDevicesServeMore) {
  ExplorerSearchSpec spec =
      SmallSearch("model=llama-2-7b-hf,trace=chat,scheduler=sarathi-512,tp=1,pp=1,batch=64");
  auto result = SearchExplorerSpace(spec);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result.value().space_size, 4374);
  ASSERT_EQ(result.value().outcomes.size(), 3u);  // h100, a100, a40
  const ExplorerOutcome& h100 = result.value().outcomes[0];
  const ExplorerOutcome& a100 = result.value().outcomes[1];
  const ExplorerOutcome& a40 = result.value().outcomes[2];
  ASSERT_TRUE(h100.rejection.empty()) << h100.rejection;
  ASSERT_TRUE(a40.rejection.empty()) << a40.rejection;
  EXPECT_LE(h100.delay_p99_s, 5.0);
  EXPECT_GT(h100.capacity_rps, a100.capacity_rps);
  EXPECT_GT(a100.capacity_rps, a40.capacity_rps);
  EXPECT_EQ(h100.capacity_rps / h100.rps_per_gpu, 16.0);  // 16 replicas of one GPU
  EXPECT_GT(h100.probes, 2);
}

// The same search on 1 and 3 threads gives the same outcomes, in the same order.
TEST(ExplorerSearchTest, ThreadsDoNotChangeTheAnswer) {
  ExplorerSearchSpec spec = SmallSearch("model=llama-2-7b-hf,trace=bwb,cluster=a40,pp=1,batch=32");
  auto one = SearchExplorerSpace(spec);
  spec.jobs = 3;
  auto three = SearchExplorerSpace(spec);
  ASSERT_TRUE(one.ok() && three.ok());
  ASSERT_EQ(one.value().outcomes.size(), three.value().outcomes.size());
  for (size_t i = 0; i < one.value().outcomes.size(); ++i) {
    EXPECT_EQ(one.value().outcomes[i].capacity_rps, three.value().outcomes[i].capacity_rps);
    EXPECT_EQ(one.value().outcomes[i].rejection, three.value().outcomes[i].rejection);
  }
}

TEST(ExplorerSearchTest, BadArgumentsAreRefused) {
  EXPECT_FALSE(SearchExplorerSpace(SmallSearch("model")).ok());
  EXPECT_FALSE(SearchExplorerSpace(SmallSearch("color=red")).ok());
  EXPECT_FALSE(SearchExplorerSpace(SmallSearch("model=gpt-5")).ok());  // matches nothing
  ExplorerSearchSpec spec = SmallSearch("");
  spec.traces.erase("bwb");
  EXPECT_FALSE(SearchExplorerSpace(spec).ok());
  spec = SmallSearch("");
  spec.requests = 1;
  EXPECT_FALSE(SearchExplorerSpace(spec).ok());
}

}  // namespace
}  // namespace stagecraft

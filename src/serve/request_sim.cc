#include "serve/request_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <vector>

#include "core/event_queue.h"
#include "core/splitmix.h"
#include "serve/speculative.h"
#include "serve/token_gaps.h"

namespace stagecraft {
namespace {

constexpr uint32_t kArrival = 0;
constexpr uint32_t kIterationEnd = 1;
// A replica looks for work once the arrivals of this instant are queued (closed-loop and
// offline clients send many requests at one time; the engine's first step sees them all).
constexpr uint32_t kWake = 2;
// The most requests one run simulates: 10^7 (a few GB of state at most; the bench runs 10^5).
constexpr int64_t kMaxRequests = 10'000'000;
// The latest arrival (2^61 ns, 73 years): arrivals saturate there, so the clock cannot wrap.
constexpr int64_t kArrivalLimitNs = int64_t{1} << 61;
// The longest mean span of arrivals accepted: requests / rate at most 10^9 s.
constexpr double kMaxArrivalSpanS = 1e9;

// A number in a message, three significant digits ("1e-300", "0.001").
std::string Short(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// The longest prompt or output accepted: 2^24 tokens.
constexpr int64_t kMaxTokens = int64_t{1} << 24;

struct Request {
  int64_t arrival_ns = 0;
  int64_t prompt = 0;
  int64_t output = 0;
  int64_t computed = 0;       // tokens whose KV is cached
  int64_t generated = 0;      // output tokens produced
  int64_t blocks = 0;         // KV blocks held
  int64_t group = -1;         // its shared prefix's group; -1 = none
  int64_t prefix_blocks = 0;  // cached prefix blocks it reads (its replica's, shared)
  int64_t scheduled = 0;      // tokens scheduled in the running iteration
  int64_t drafts = 0;         // of them, draft tokens it verifies (speculative decoding)
  int64_t accepted = 0;       // of those, the ones accepted
  int64_t first_scheduled_ns = -1;
  int64_t first_token_ns = -1;
  int64_t last_token_ns = -1;  // its latest output token (where the next gap starts)
  int64_t finish_ns = -1;
  int64_t pending() const { return prompt + generated - computed; }
};

// A prefix a replica has cached: its whole blocks, the running requests reading it, and when it
// was last used (eviction order).
struct CachedPrefix {
  int64_t blocks = 0;
  int64_t readers = 0;
  int64_t last_use_ns = 0;
};

struct Replica {
  std::map<int64_t, CachedPrefix> prefixes;  // by group
  std::deque<int32_t> waiting;
  std::vector<int32_t> running;  // in admission order
  std::vector<int32_t> batch;    // scheduled in the iteration in flight
  int64_t free_blocks = 0;
  int64_t outstanding = 0;  // routed and not finished
  bool busy = false;
  bool wake_pending = false;  // a kWake event is queued
};

class ServingModel {
 public:
  ServingModel(const ReplicaModel& replica, const Workload& workload, Routing routing,
               std::vector<IterationRecord>* records, Progress* progress)
      : model_(replica),
        workload_(workload),
        routing_(routing),
        rng_(workload.seed),
        speculator_(replica.engine, workload.seed),
        records_(records),
        progress_(progress) {
    capacity_blocks_ = replica.kv_capacity_tokens / replica.engine.block_tokens;
    replicas_.resize(static_cast<size_t>(replica.shape.replicas));
    for (Replica& r : replicas_) r.free_blocks = capacity_blocks_;
    requests_.reserve(static_cast<size_t>(workload.requests));
  }

  // The open loop chains its arrivals (each schedules the next); a closed loop starts with its
  // concurrency and sends one more at each completion; offline sends everything at once.
  void Start(EventQueue& queue) {
    using Client = Workload::Client;
    if (workload_.client == Client::kOpen) return ScheduleArrival(queue, 0);
    const int64_t first =
        workload_.client == Client::kOffline ? workload_.requests : workload_.concurrency;
    for (int64_t sent = 0; sent < std::min(first, workload_.requests); ++sent) {
      ScheduleArrival(queue, 0);
    }
  }

  void OnEvent(const Event& event, EventQueue& queue) {
    if (stopped_) return;  // the queue drains without effect
    Advance(event.time.ns());
    if (event.kind == kArrival) {
      OnArrival(static_cast<int32_t>(event.target), queue);
    } else if (event.kind == kWake) {
      Replica& replica = replicas_[event.target];
      replica.wake_pending = false;
      if (!replica.busy) StartIteration(static_cast<int32_t>(event.target), queue);
    } else {
      OnIterationEnd(static_cast<int32_t>(event.target), queue);
    }
  }

  const std::vector<Request>& requests() const { return requests_; }
  int64_t iterations() const { return iterations_; }
  int64_t preemptions() const { return preemptions_; }
  int64_t in_system_integral_ns() const { return in_system_integral_ns_; }
  double kv_block_ns() const { return kv_block_ns_; }
  double kv_peak() const { return kv_peak_; }
  int64_t capacity_blocks() const { return capacity_blocks_; }
  int64_t prefix_hit_tokens() const { return prefix_hit_tokens_; }
  int64_t decode_steps() const { return decode_steps_; }
  int64_t decode_step_tokens() const { return decode_step_tokens_; }
  const TokenGaps& token_gaps() const { return token_gaps_; }
  bool stopped() const { return stopped_; }

 private:
  // A request is scheduled for the first time: its delay is final. Past the early stop's bound
  // (Workload::stop_past_delay_s) it counts as late; more late requests than the P99's nearest
  // rank allows of all of them stop the run.
  void FirstScheduled(Request& request) {
    request.first_scheduled_ns = now_ns_;
    if (workload_.stop_past_delay_s <= 0) return;
    const double delay = static_cast<double>(now_ns_ - request.arrival_ns) * 1e-9;
    if (delay <= workload_.stop_past_delay_s) return;
    const auto total =
        static_cast<double>(workload_.trace.empty() ? workload_.requests
                                                    : static_cast<int64_t>(workload_.trace.size()));
    const double allowed = total - std::max(1.0, std::ceil(0.99 * total));
    if (static_cast<double>(++late_) > allowed) stopped_ = true;
  }

  int64_t Draw(const LengthDist& dist) {
    return dist.low == dist.high ? dist.low : rng_.NextInRange(dist.low, dist.high);
  }

  void ScheduleArrival(EventQueue& queue, int64_t after_ns) {
    if (!workload_.trace.empty()) {
      if (requests_.size() >= workload_.trace.size()) return;
      const TraceRequest& traced = workload_.trace[requests_.size()];
      Request request;
      request.arrival_ns = traced.arrival_ns;
      request.prompt = traced.prompt;
      request.output = traced.output;
      request.last_token_ns = traced.first_token_ns;
      Push(queue, request);
      return;
    }
    if (static_cast<int64_t>(requests_.size()) >= workload_.requests) return;
    Request request;
    request.arrival_ns = after_ns;
    if (workload_.client == Workload::Client::kOpen) {
      const double mean_gap_s = 1.0 / workload_.rate_rps;
      const double cv = workload_.arrival_cv;
      const double gap_s = cv == 1.0 ? rng_.NextExponential(mean_gap_s)
                                     : rng_.NextGamma(1.0 / (cv * cv), mean_gap_s * cv * cv);
      // The clock saturates at kArrivalLimitNs: the rate is bounded (CheckWorkload), but a
      // gamma gap of a large --arrival-cv has a tail long enough to overflow 64-bit ns.
      const double gap_ns = std::min(gap_s * 1e9, static_cast<double>(kArrivalLimitNs));
      request.arrival_ns =
          std::min<int64_t>(kArrivalLimitNs, request.arrival_ns + std::llround(gap_ns));
    }
    if (!workload_.length_table.empty()) {
      const RequestLengths& row = workload_.length_table[static_cast<size_t>(
          rng_.NextInRange(0, static_cast<int64_t>(workload_.length_table.size()) - 1))];
      request.prompt = row.prompt;
      request.output = row.output;
    } else {
      request.prompt = Draw(workload_.prompt);
      request.output = Draw(workload_.output);
    }
    if (workload_.prefix_groups > 0) {
      request.group = rng_.NextInRange(0, workload_.prefix_groups - 1);
      request.prompt += workload_.prefix_tokens;
    }
    Push(queue, request);
  }

  void Push(EventQueue& queue, Request request) {
    if (workload_.prefilled) {
      request.computed = request.prompt;
      request.generated = 1;
      request.first_token_ns = request.arrival_ns;
      if (request.last_token_ns < 0) request.last_token_ns = request.arrival_ns;
    }
    requests_.push_back(request);
    queue.Push(Time::Nanoseconds(request.arrival_ns), kArrival,
               static_cast<uint32_t>(requests_.size() - 1));
  }

  // Time moves to `now`: the integrals of requests in the system and of KV blocks in use.
  void Advance(int64_t now) {
    const int64_t elapsed = now - now_ns_;
    in_system_integral_ns_ += in_system_ * elapsed;
    kv_block_ns_ += static_cast<double>(used_blocks_) * static_cast<double>(elapsed);
    now_ns_ = now;
  }

  // The least loaded replica among those `eligible` accepts (the first of equals).
  template <typename Eligible>
  int32_t LeastOutstanding(Eligible eligible) const {
    int32_t best = -1;
    for (int32_t index = 0; index < static_cast<int32_t>(replicas_.size()); ++index) {
      if (!eligible(index)) continue;
      if (best < 0 || replicas_[index].outstanding < replicas_[best].outstanding) best = index;
    }
    return best;
  }

  int32_t Route(const Request& request) {
    const int32_t count = static_cast<int32_t>(replicas_.size());
    const auto any = [](int32_t) { return true; };
    if (routing_ == Routing::kRoundRobin) return next_round_robin_++ % count;
    if (routing_ == Routing::kLeastOutstanding || request.group < 0) return LeastOutstanding(any);
    // kKvAware (request_sim.h): SGLang's router thresholds.
    int64_t least = replicas_[0].outstanding;
    int64_t most = least;
    for (const Replica& replica : replicas_) {
      least = std::min(least, replica.outstanding);
      most = std::max(most, replica.outstanding);
    }
    const bool imbalanced =
        most - least > 64 && static_cast<double>(most) > 1.5 * static_cast<double>(least);
    const double match =
        static_cast<double>(CachedPrefixTokens()) / static_cast<double>(request.prompt);
    if (!imbalanced && match > 0.3) {
      const int32_t holder = LeastOutstanding(
          [&](int32_t index) { return replicas_[index].prefixes.count(request.group) > 0; });
      if (holder >= 0) return holder;
    }
    return LeastOutstanding(any);
  }

  // The tokens of a prefix a cache holds: its whole blocks.
  int64_t CachedPrefixTokens() const {
    const int64_t block = model_.engine.block_tokens;
    return workload_.prefix_tokens / block * block;
  }

  void OnArrival(int32_t id, EventQueue& queue) {
    ++in_system_;
    const int32_t target = Route(requests_[id]);
    Replica& replica = replicas_[target];
    replica.waiting.push_back(id);
    ++replica.outstanding;
    if (workload_.client == Workload::Client::kOpen) {
      ScheduleArrival(queue, requests_[id].arrival_ns);
      if (!replica.busy) StartIteration(target, queue);
    } else if (!replica.busy && !replica.wake_pending) {
      replica.wake_pending = true;
      queue.Push(Time::Nanoseconds(now_ns_), kWake, static_cast<uint32_t>(target));
    }
  }

  // Blocks of `tokens` of context; with a sliding window, of the KV it holds (KvTokensHeld:
  // the windowed layers' blocks past the window freed, as vLLM's hybrid KV cache manager does).
  int64_t BlocksFor(int64_t tokens) const {
    const int64_t block = model_.engine.block_tokens;
    if (model_.kv.window_tokens > 0 && tokens > model_.kv.window_tokens) {
      const double held = KvTokensHeld(model_, static_cast<double>(tokens));
      return static_cast<int64_t>(std::ceil(held / static_cast<double>(block) - 1e-9));
    }
    return (tokens + block - 1) / block;
  }

  void Release(Replica& replica, Request& request) {
    replica.free_blocks += request.blocks;
    used_blocks_ -= request.blocks;
    request.blocks = 0;
    if (request.prefix_blocks > 0) {
      CachedPrefix& prefix = replica.prefixes.at(request.group);
      --prefix.readers;
      prefix.last_use_ns = now_ns_;
      request.prefix_blocks = 0;
    }
  }

  // Frees cached prefixes no running request reads, least recently used first (the lowest
  // group of equals), until `need` blocks are free or none is left to evict.
  void EvictFor(Replica& replica, int64_t need) {
    while (need > replica.free_blocks) {
      auto victim = replica.prefixes.end();
      for (auto it = replica.prefixes.begin(); it != replica.prefixes.end(); ++it) {
        if (it->second.readers > 0) continue;
        if (victim == replica.prefixes.end() ||
            it->second.last_use_ns < victim->second.last_use_ns) {
          victim = it;
        }
      }
      if (victim == replica.prefixes.end()) return;
      replica.free_blocks += victim->second.blocks;
      used_blocks_ -= victim->second.blocks;
      replica.prefixes.erase(victim);
    }
  }

  // A request starting its prompt on a replica that holds its prefix reads the cached blocks
  // instead of computing them.
  void ReadCachedPrefix(Replica& replica, Request& request) {
    if (request.group < 0 || request.computed > 0 || request.prefix_blocks > 0) return;
    auto cached = replica.prefixes.find(request.group);
    if (cached == replica.prefixes.end()) return;
    ++cached->second.readers;
    cached->second.last_use_ns = now_ns_;
    request.prefix_blocks = cached->second.blocks;
    request.computed = cached->second.blocks * model_.engine.block_tokens;
    prefix_hit_tokens_ += request.computed;
  }

  // A request whose prompt has passed its prefix hands the prefix's whole blocks to its
  // replica's cache, unless the replica caches that group already.
  void CachePrefix(Replica& replica, Request& request) {
    if (request.group < 0 || request.prefix_blocks > 0) return;
    const int64_t blocks = CachedPrefixTokens() / model_.engine.block_tokens;
    if (blocks == 0 || request.computed < blocks * model_.engine.block_tokens ||
        replica.prefixes.count(request.group) > 0) {
      return;
    }
    replica.prefixes[request.group] = CachedPrefix{blocks, 1, now_ns_};
    request.blocks -= blocks;
    request.prefix_blocks = blocks;
  }

  // Blocks a request still needs for `tokens` more (its cached prefix's are shared).
  int64_t Need(const Request& request, int64_t tokens) const {
    return std::max<int64_t>(
        0, BlocksFor(request.computed + tokens) - request.blocks - request.prefix_blocks);
  }

  void Grow(Replica& replica, Request& request, int64_t blocks) {
    replica.free_blocks -= blocks;
    used_blocks_ += blocks;
    request.blocks += blocks;
    kv_peak_ = std::max(kv_peak_, static_cast<double>(used_blocks_));
  }

  // vLLM's recompute preemption: the request drops its KV and returns to the queue's front.
  void Preempt(Replica& replica) {
    const int32_t victim = replica.running.back();
    replica.running.pop_back();
    Request& request = requests_[victim];
    Release(replica, request);
    request.computed = 0;
    request.scheduled = 0;
    request.drafts = 0;
    replica.waiting.push_front(victim);
    ++preemptions_;
  }

  // The running requests first, in admission order; a request short of blocks preempts from
  // the back of the list (itself last).
  void ScheduleRunning(Replica& replica, int64_t& budget) {
    for (size_t slot = 0; slot < replica.running.size() && budget > 0; ++slot) {
      Request& request = requests_[replica.running[slot]];
      // A decoding sequence verifies its drafts too: K + 1 tokens of the budget and the blocks.
      const bool decoding = request.generated > 0 && request.pending() == 1;
      const int64_t drafts = decoding ? speculator_.Drafts(request.generated, request.output) : 0;
      const int64_t tokens = std::min(request.pending() + drafts, budget);
      const int64_t need = Need(request, tokens);
      EvictFor(replica, need);
      while (need > replica.free_blocks && replica.running.size() > slot + 1) Preempt(replica);
      if (need > replica.free_blocks) {
        Preempt(replica);
        break;
      }
      Grow(replica, request, need);
      request.scheduled = tokens;
      request.drafts = tokens - std::min(tokens, request.pending());
      budget -= tokens;
      replica.batch.push_back(replica.running[slot]);
    }
  }

  // The blocks a request may still claim before it finishes, which the engine's admission rule
  // holds back for it (EngineOptions::Admission): kNoEvict its prompt and its whole output,
  // kNewTokenRatio new_token_ratio of the output still to come (at most 4096 tokens of it,
  // SGLang's CLIP_MAX_NEW_TOKENS), kGreedy nothing.
  int64_t Reserved(const Request& request) const {
    using Admission = EngineOptions::Admission;
    const EngineOptions& engine = model_.engine;
    if (engine.admission == Admission::kGreedy) return 0;
    int64_t ahead = request.output - request.generated;
    if (engine.admission == Admission::kNewTokenRatio) {
      ahead = static_cast<int64_t>(
          std::ceil(static_cast<double>(std::min<int64_t>(ahead, 4096)) * engine.new_token_ratio));
    }
    const int64_t total = BlocksFor(request.prompt + request.generated + ahead);
    return std::max<int64_t>(0, total - request.blocks - request.prefix_blocks);
  }

  // What the running requests of a replica hold back (Reserved, summed).
  int64_t HeldBack(const Replica& replica) const {
    if (model_.engine.admission == EngineOptions::Admission::kGreedy) return 0;
    int64_t blocks = 0;
    for (int32_t id : replica.running) blocks += Reserved(requests_[id]);
    return blocks;
  }

  // Whether a waiting request fits beside what the running ones hold back (cached prefixes
  // evicted for it first when `evict`); greedy admission checks only the blocks of its first
  // chunk, `need`.
  bool Fits(Replica& replica, const Request& request, int64_t need, int64_t held_back,
            bool evict = true) {
    const int64_t claim = std::max(need, held_back + Reserved(request));
    if (evict) EvictFor(replica, claim);
    return claim <= replica.free_blocks;
  }

  // Whether the replica may admit one more request: max_seqs and Vidur's running cap.
  bool RoomToAdmit(const Replica& replica) const {
    const int64_t running = static_cast<int64_t>(replica.running.size());
    return running < model_.engine.max_seqs &&
           (model_.engine.max_running == 0 || running < model_.engine.max_running);
  }

  // vLLM V0's prefill step (EngineOptions::Batching::kPrefillFirst): whole prompts, first come
  // first served, while the batch's size times its longest prompt stays within the token budget
  // (a prompt longer than the budget runs alone) and its blocks are free.
  void AdmitWholePrompts(Replica& replica) {
    int64_t longest = 0;
    int64_t held_back = HeldBack(replica);
    while (!replica.waiting.empty() && RoomToAdmit(replica)) {
      const int32_t id = replica.waiting.front();
      Request& request = requests_[id];
      const int64_t tokens = request.pending();
      const int64_t padded =
          static_cast<int64_t>(replica.batch.size() + 1) * std::max(longest, tokens);
      if (!replica.batch.empty() && padded > model_.engine.token_budget) break;
      const int64_t need = Need(request, tokens);
      // vLLM V0's whole-prompt step evicts no cached prefix for a new prompt.
      const bool evict = model_.engine.admission != EngineOptions::Admission::kGreedy;
      if (!Fits(replica, request, need, held_back, evict)) break;
      replica.waiting.pop_front();
      Grow(replica, request, need);
      held_back += Reserved(request);
      request.scheduled = tokens;
      if (request.first_scheduled_ns < 0) FirstScheduled(request);
      longest = std::max(longest, tokens);
      replica.running.push_back(id);
      replica.batch.push_back(id);
    }
  }

  // New requests after the running ones, first come first served: a prompt cut to what is left
  // of the budget (chunked), or whole while it fits there (unchunked; a prompt longer than the
  // whole budget runs when no other prompt is in the iteration).
  void AdmitWaiting(Replica& replica, int64_t& budget) {
    const bool whole = model_.engine.batching == EngineOptions::Batching::kUnchunked;
    bool prompt_admitted = false;
    int64_t held_back = HeldBack(replica);
    while (!replica.waiting.empty() && budget > 0 && RoomToAdmit(replica)) {
      const int32_t id = replica.waiting.front();
      Request& request = requests_[id];
      ReadCachedPrefix(replica, request);
      const int64_t pending = request.pending();
      const bool alone = pending > model_.engine.token_budget && !prompt_admitted;
      if (whole && pending > budget && !alone) break;
      const int64_t tokens = whole ? pending : std::min(pending, budget);
      const int64_t need = Need(request, tokens);
      if (!Fits(replica, request, need, held_back)) break;
      replica.waiting.pop_front();
      Grow(replica, request, need);
      held_back += Reserved(request);
      request.scheduled = tokens;
      if (request.first_scheduled_ns < 0) FirstScheduled(request);
      budget = std::max<int64_t>(0, budget - tokens);
      prompt_admitted = true;
      replica.running.push_back(id);
      replica.batch.push_back(id);
    }
  }

  void StartIteration(int32_t index, EventQueue& queue) {
    Replica& replica = replicas_[index];
    replica.batch.clear();
    int64_t budget = model_.engine.token_budget;
    if (model_.engine.batching == EngineOptions::Batching::kPrefillFirst) {
      AdmitWholePrompts(replica);
      // No prompt admitted: one decode step of every running request (max_seqs bounds them).
      int64_t decodes = std::numeric_limits<int64_t>::max();
      if (replica.batch.empty()) ScheduleRunning(replica, decodes);
    } else {
      ScheduleRunning(replica, budget);
      AdmitWaiting(replica, budget);
    }
    if (replica.batch.empty()) {
      replica.busy = false;
      return;
    }
    const double seconds = BatchSeconds(replica);
    const int64_t duration = std::max<int64_t>(1, std::llround(seconds * 1e9));
    replica.busy = true;
    ++iterations_;
    if (records_ != nullptr) Record(index, duration);
    queue.Push(Time::Nanoseconds(now_ns_ + duration), kIterationEnd, static_cast<uint32_t>(index));
  }

  // The batch's time: the roofline of its work and, when speculating, the draft's steps after
  // it, for every sequence that emits and has tokens left to propose. The acceptances of the
  // verified drafts are drawn here, in batch order.
  double BatchSeconds(Replica& replica) {
    IterationWork work;
    proposals_.clear();
    for (int32_t id : replica.batch) {
      Request& request = requests_[id];
      const bool emits = request.scheduled >= request.pending();
      AddSequence(model_, static_cast<double>(request.scheduled),
                  static_cast<double>(request.computed), emits, work);
      if (!model_.draft || !emits) continue;
      work.sequences += static_cast<double>(request.drafts);  // a logit per verified draft
      request.accepted = speculator_.Accept(request.drafts);
      const int64_t kept = request.scheduled - request.drafts + request.accepted;
      const int64_t proposed =
          workload_.prefill_only
              ? 0
              : speculator_.Drafts(request.generated + 1 + request.accepted, request.output);
      if (proposed > 0) {
        proposals_.push_back({static_cast<double>(request.computed + kept), proposed});
      }
    }
    const double seconds = IterationSeconds(model_, work, &kernel_sums_).total_s;
    return proposals_.empty() ? seconds : seconds + DraftSeconds(*model_.draft, proposals_);
  }

  // A decoding sequence's step ends: it keeps the accepted drafts as output and KV (the rejected
  // drafts' slots are written over by its next step); OnIterationEnd adds the one token more.
  // Returns the drafts kept (0 for a prefill chunk or without speculation).
  int64_t EndDecodeStep(Request& request) {
    if (request.generated == 0 || request.pending() != 1) return 0;
    const int64_t kept = request.accepted;
    ++decode_steps_;
    decode_step_tokens_ += 1 + kept;
    request.generated += kept;
    request.scheduled -= request.drafts - kept;
    request.drafts = 0;
    request.accepted = 0;
    return kept;
  }

  void Record(int32_t index, int64_t duration) {
    const Replica& replica = replicas_[index];
    IterationRecord record;
    record.replica = index;
    record.start_ns = now_ns_;
    record.end_ns = now_ns_ + duration;
    record.kv_blocks = capacity_blocks_ - replica.free_blocks;
    for (int32_t id : replica.batch) {
      const Request& request = requests_[id];
      const bool decode = request.generated > 0 && request.pending() == 1;
      (decode ? record.decode_tokens : record.prefill_tokens) += request.scheduled;
    }
    records_->push_back(record);
  }

  void OnIterationEnd(int32_t index, EventQueue& queue) {
    Replica& replica = replicas_[index];
    for (int32_t id : replica.batch) {
      Request& request = requests_[id];
      const int64_t kept = EndDecodeStep(request);
      request.computed += request.scheduled;
      request.scheduled = 0;
      CachePrefix(replica, request);
      if (request.pending() != 0) continue;  // a prefill chunk short of the end
      ++request.generated;
      // A verify step's tokens reach the client together: the first after the step's gap, the
      // kept drafts with it (gaps of 0), so the mean ITL stays the token-weighted TPOT.
      if (request.generated > 1) token_gaps_.Add(now_ns_ - request.last_token_ns);
      for (int64_t draft = 0; draft < kept; ++draft) token_gaps_.Add(0);
      request.last_token_ns = now_ns_;
      if (request.first_token_ns < 0) request.first_token_ns = now_ns_;
      if (request.generated < request.output && !workload_.prefill_only) continue;
      request.finish_ns = now_ns_;
      // Every 1024th request: the clock is read no more often than that.
      if (++finished_ % 1024 == 0 && progress_->shown()) progress_->Update(finished_);
      Release(replica, request);
      replica.running.erase(std::find(replica.running.begin(), replica.running.end(), id));
      --replica.outstanding;
      --in_system_;
      // A closed-loop client sends its next request as this one completes.
      if (workload_.client == Workload::Client::kClosed) ScheduleArrival(queue, now_ns_);
    }
    replica.batch.clear();
    StartIteration(index, queue);
  }

  const ReplicaModel& model_;
  const Workload& workload_;
  Routing routing_;
  SplitMix64 rng_;
  Speculator speculator_;
  KernelSumMemo kernel_sums_;             // the replica's kernel sums by their rows (step_cost.h)
  std::vector<DraftProposal> proposals_;  // the iteration's draft proposals (BatchSeconds)
  std::vector<IterationRecord>* records_;
  Progress* progress_;  // told the finished requests
  int64_t finished_ = 0;
  std::vector<Request> requests_;
  std::vector<Replica> replicas_;
  int64_t capacity_blocks_ = 0;
  int64_t now_ns_ = 0;
  int64_t in_system_ = 0;
  int64_t in_system_integral_ns_ = 0;
  int64_t used_blocks_ = 0;
  double kv_block_ns_ = 0;
  double kv_peak_ = 0;
  int32_t next_round_robin_ = 0;
  int64_t iterations_ = 0;
  int64_t preemptions_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t decode_steps_ = 0;
  int64_t decode_step_tokens_ = 0;
  TokenGaps token_gaps_;
  int64_t late_ = 0;  // requests first scheduled past Workload::stop_past_delay_s
  bool stopped_ = false;
};

// Nearest rank: the smallest value with at least p of the sample at or below it.
// REQUIRES: `values` ascending.
Percentiles Summarize(const std::vector<double>& values) {
  Percentiles result;
  if (values.empty()) return result;
  const auto rank = [&](double p) {
    const double position = std::ceil(p * static_cast<double>(values.size()));
    return values[static_cast<size_t>(std::max(1.0, position)) - 1];
  };
  result.p50 = rank(0.50);
  result.p90 = rank(0.90);
  result.p99 = rank(0.99);
  double sum = 0;
  for (double value : values) sum += value;
  result.mean = sum / static_cast<double>(values.size());
  return result;
}

// The most KV one request can hold: a replica's capacity, or under EP one attention group's
// (a request lives in one data-parallel engine's cache).
int64_t RequestCapacityTokens(const ReplicaModel& replica) {
  return replica.kv_capacity_tokens / replica.shape.attention_dp();
}
// "a replica's KV cache of N tokens", or one attention group's with the replica's total.
std::string RequestCacheText(const ReplicaModel& replica) {
  const int32_t groups = replica.shape.attention_dp();
  const std::string tokens = std::to_string(RequestCapacityTokens(replica)) + " tokens";
  if (groups == 1) return "a replica's KV cache of " + tokens;
  return "one attention group's KV cache of " + tokens + " (the replica's " +
         std::to_string(replica.kv_capacity_tokens) + " over " + std::to_string(groups) +
         " data-parallel groups)";
}

Status CheckTraceFits(const ReplicaModel& replica, const Workload& workload) {
  for (size_t index = 0; index < workload.trace.size(); ++index) {
    const TraceRequest& request = workload.trace[index];
    if (KvTokensHeld(replica, static_cast<double>(request.prompt + request.output)) >
        static_cast<double>(RequestCapacityTokens(replica))) {
      return Error{"serve: trace request " + std::to_string(index + 1) + " of " +
                   std::to_string(request.prompt) + " + " + std::to_string(request.output) +
                   " tokens does not fit " + RequestCacheText(replica) + " (expected shorter " +
                   "requests, or more GPUs per replica)"};
    }
  }
  if (workload.trace.size() > static_cast<size_t>(kMaxRequests)) {
    return Error{"serve: the trace has more than " + std::to_string(kMaxRequests) + " requests"};
  }
  return Status::Ok();
}

Status CheckWorkload(const ReplicaModel& replica, const Workload& workload) {
  if (workload.prefix_groups < 0 || workload.prefix_groups > 1'000'000) {
    return Error{"--prefix-groups " + std::to_string(workload.prefix_groups) +
                 ": expected 0 (no shared prefixes) to 1000000"};
  }
  if (workload.prefix_groups > 0 &&
      (workload.prefix_tokens < 1 || workload.prefix_tokens > kMaxTokens)) {
    return Error{"--prefix-tokens " + std::to_string(workload.prefix_tokens) + ": expected 1 to " +
                 std::to_string(kMaxTokens) + " tokens of shared prefix with --prefix-groups"};
  }
  if (workload.prefix_groups == 0 && workload.prefix_tokens != 0) {
    return Error{
        "--prefix-tokens needs --prefix-groups G (how many distinct prefixes the "
        "requests share)"};
  }
  if (!workload.trace.empty() && workload.prefix_groups > 0) {
    return Error{
        "--prefix-groups: not with --request-trace (a trace's rows carry no prefix); "
        "drop one"};
  }
  if (workload.client != Workload::Client::kOpen && !workload.trace.empty()) {
    return Error{
        std::string(workload.client == Workload::Client::kClosed ? "--concurrency" : "--offline") +
        ": not with --request-trace (the trace's arrival times are its client); "
        "drop one"};
  }
  if (workload.client == Workload::Client::kClosed &&
      (workload.concurrency < 1 || workload.concurrency > kMaxRequests)) {
    return Error{"--concurrency " + std::to_string(workload.concurrency) + ": expected 1 to " +
                 std::to_string(kMaxRequests) + " requests in flight"};
  }
  if (!workload.trace.empty()) return CheckTraceFits(replica, workload);
  if (!(workload.rate_rps > 0) || !std::isfinite(workload.rate_rps)) {
    return Error{"--rate: the arrival rate must be a positive number of requests per second"};
  }
  if (static_cast<double>(workload.requests) / workload.rate_rps > kMaxArrivalSpanS) {
    return Error{"--rate " + Short(workload.rate_rps) + ": " + std::to_string(workload.requests) +
                 " requests at that rate would arrive over more than 10^9 s (expected a rate of "
                 "at least " +
                 Short(static_cast<double>(workload.requests) / kMaxArrivalSpanS) +
                 " per second, or fewer --requests)"};
  }
  // Gamma gaps of shape 1/cv^2: below 10^-3 the shape (10^6) is as good as fixed gaps, and a
  // denormal cv made it infinite (the sampler never returned).
  if (!(workload.arrival_cv >= 1e-3) || workload.arrival_cv > 100) {
    return Error{
        "--arrival-cv: the arrivals' coefficient of variation must be in [0.001, 100] (1 "
        "= Poisson, above 1 bursty, near 0 evenly spaced)"};
  }
  if (workload.requests < 1 || workload.requests > kMaxRequests) {
    return Error{"--requests " + std::to_string(workload.requests) + ": expected 1 to " +
                 std::to_string(kMaxRequests)};
  }
  int64_t prompt = workload.prompt.high + workload.prefix_tokens;
  int64_t output = workload.output.high;
  if (!workload.length_table.empty()) {
    if (workload.prefix_groups > 0) {
      return Error{"--prefix-groups: not with a length trace (its rows carry no prefix)"};
    }
    prompt = 0;
    output = 0;
    for (const RequestLengths& row : workload.length_table) {
      if (row.prompt < 1 || row.output < 1 || row.prompt > kMaxTokens || row.output > kMaxTokens) {
        return Error{"serve: a length trace row of " + std::to_string(row.prompt) + " + " +
                     std::to_string(row.output) + " tokens (expected 1 to " +
                     std::to_string(kMaxTokens) + " each)"};
      }
      if (row.prompt + row.output > prompt + output) {
        prompt = row.prompt;
        output = row.output;
      }
    }
  }
  const int64_t longest = prompt + output;
  if (KvTokensHeld(replica, static_cast<double>(longest)) >
      static_cast<double>(RequestCapacityTokens(replica))) {
    return Error{"serve: a request of " + std::to_string(prompt) + " + " + std::to_string(output) +
                 " tokens does not fit " + RequestCacheText(replica) + " (expected " +
                 "shorter --prompt-tokens/--output-tokens, or more GPUs per replica)"};
  }
  return Status::Ok();
}

}  // namespace

ServeStats SummarizeRequests(const std::vector<RequestTimes>& requests, const Slo& slo,
                             int64_t gpus, int64_t end_ns) {
  ServeStats stats;
  stats.requests = static_cast<int64_t>(requests.size());
  if (requests.empty()) return stats;
  int64_t start_ns = requests.front().arrival_ns;
  for (const RequestTimes& request : requests) start_ns = std::min(start_ns, request.arrival_ns);
  stats.span_s = static_cast<double>(end_ns - start_ns) * 1e-9;
  std::vector<double> ttft, tpot, e2e, queued;
  int64_t good = 0;
  double output_tokens = 0;
  double prompt_tokens = 0;
  for (const RequestTimes& request : requests) {
    const double first = static_cast<double>(request.first_token_ns - request.arrival_ns) * 1e-9;
    const double total = static_cast<double>(request.finish_ns - request.arrival_ns) * 1e-9;
    ttft.push_back(first);
    e2e.push_back(total);
    queued.push_back(static_cast<double>(request.first_scheduled_ns - request.arrival_ns) * 1e-9);
    stats.e2e_sum_ns += request.finish_ns - request.arrival_ns;
    output_tokens += static_cast<double>(request.output);
    prompt_tokens += static_cast<double>(request.prompt);
    double per_token = 0;
    if (request.output > 1) {
      per_token = static_cast<double>(request.finish_ns - request.first_token_ns) * 1e-9 /
                  static_cast<double>(request.output - 1);
      tpot.push_back(per_token);
    }
    if (first <= slo.ttft_s && per_token <= slo.tpot_s) ++good;
  }
  for (std::vector<double>* values : {&ttft, &tpot, &e2e, &queued}) {
    std::sort(values->begin(), values->end());
  }
  stats.ttft_s = Summarize(ttft);
  stats.tpot_s = Summarize(tpot);
  stats.e2e_s = Summarize(e2e);
  stats.ttft_sorted_s = std::move(ttft);
  stats.tpot_sorted_s = std::move(tpot);
  stats.e2e_sorted_s = std::move(e2e);
  stats.queue_s = Summarize(queued);
  const double span = std::max(stats.span_s, 1e-9);
  stats.throughput_rps = static_cast<double>(stats.requests) / span;
  stats.output_tokens_per_s = output_tokens / span;
  stats.total_tokens_per_s = (prompt_tokens + output_tokens) / span;
  stats.slo_attainment = static_cast<double>(good) / static_cast<double>(stats.requests);
  stats.goodput_rps = static_cast<double>(good) / span;
  stats.goodput_rps_per_gpu = stats.goodput_rps / static_cast<double>(std::max<int64_t>(gpus, 1));
  return stats;
}

Result<ServeStats> SimulateServing(const ReplicaModel& replica, const Workload& workload,
                                   Routing routing, const Slo& slo,
                                   std::vector<IterationRecord>* iterations,
                                   std::vector<RequestTimes>* times,
                                   const ProgressSink& progress_sink) {
  STAGECRAFT_RETURN_IF_ERROR(CheckWorkload(replica, workload));
  const int64_t total =
      workload.trace.empty() ? workload.requests : static_cast<int64_t>(workload.trace.size());
  Progress progress(progress_sink, "serve: requests finished", total);
  ServingModel model(replica, workload, routing, iterations, &progress);
  EventQueue queue;
  model.Start(queue);
  const Time end = RunEvents(queue, model);
  if (model.stopped()) {
    ServeStats stopped;
    stopped.stopped_late = true;
    return stopped;
  }
  std::vector<RequestTimes> requests;
  requests.reserve(model.requests().size());
  double prompt_tokens = 0;
  for (const Request& request : model.requests()) {
    requests.push_back({request.arrival_ns, request.first_scheduled_ns, request.first_token_ns,
                        request.finish_ns, request.prompt, request.output});
    prompt_tokens += static_cast<double>(request.prompt);
  }
  ServeStats stats = SummarizeRequests(requests, slo, replica.shape.gpus(), end.ns());
  const double span = std::max(stats.span_s, 1e-9);
  stats.itl_s = model.token_gaps().Summarize();
  stats.iterations = model.iterations();
  stats.preemptions = model.preemptions();
  stats.in_system_integral_ns = model.in_system_integral_ns();
  stats.mean_in_system = static_cast<double>(stats.in_system_integral_ns) * 1e-9 / span;
  const double all_blocks = static_cast<double>(model.capacity_blocks()) * replica.shape.replicas;
  stats.kv_utilization_mean = model.kv_block_ns() / (span * 1e9) / all_blocks;
  stats.kv_utilization_peak = model.kv_peak() / all_blocks;
  stats.decode_steps = model.decode_steps();
  stats.decode_step_tokens = model.decode_step_tokens();
  stats.prefix_hit_rate =
      prompt_tokens > 0 ? static_cast<double>(model.prefix_hit_tokens()) / prompt_tokens : 0;
  if (times != nullptr) *times = std::move(requests);
  return stats;
}

}  // namespace stagecraft

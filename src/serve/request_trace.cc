// The request simulator's inputs as text (request_sim.h): request traces (CSV) and token-count
// distributions (--prompt-tokens, --output-tokens).
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "serve/request_sim.h"
#include "serve/text_lines.h"

namespace stagecraft {
namespace {

// The longest prompt or output accepted: 2^24 tokens (request_sim.cc checks the same bound).
constexpr int64_t kMaxTokens = int64_t{1} << 24;

bool ParseCount(std::string_view part, int64_t& value) {
  const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
  return error == std::errc() && end == part.data() + part.size() && value >= 1 &&
         value <= kMaxTokens;
}

}  // namespace

Result<std::vector<TraceRequest>> ParseRequestTrace(std::string_view text,
                                                    const std::string& source) {
  std::vector<TraceRequest> requests;
  int64_t last_ns = 0;
  STAGECRAFT_RETURN_IF_ERROR(
      ForEachDataLine(text, [&](std::string_view line, int64_t line_number) -> Status {
        if (requests.empty() && line == "arrival_s,prompt_tokens,output_tokens")
          return Status::Ok();
        const std::string where = source + ":" + std::to_string(line_number) + ": ";
        const size_t first = line.find(',');
        const size_t second = first == std::string_view::npos ? first : line.find(',', first + 1);
        TraceRequest request;
        double arrival_s = -1;
        bool ok = second != std::string_view::npos;
        if (ok) {
          const std::string arrival(line.substr(0, first));
          char* end = nullptr;
          arrival_s = std::strtod(arrival.c_str(), &end);
          ok = !arrival.empty() && end == arrival.c_str() + arrival.size() && arrival_s >= 0 &&
               arrival_s <= 1e9 &&
               ParseCount(line.substr(first + 1, second - first - 1), request.prompt) &&
               ParseCount(line.substr(second + 1), request.output);
        }
        if (!ok) {
          return Error{where + "expected arrival_s,prompt_tokens,output_tokens (seconds >= 0, " +
                       "token counts 1 to " + std::to_string(kMaxTokens) +
                       "), e.g. 0.25,512,64; got '" + std::string(line) + "'"};
        }
        request.arrival_ns = std::llround(arrival_s * 1e9);
        if (request.arrival_ns < last_ns) {
          return Error{
              where + "arrival " + std::string(line.substr(0, first)) +
              " s is before the previous request's (expected the requests in arrival order)"};
        }
        last_ns = request.arrival_ns;
        requests.push_back(request);
        return Status::Ok();
      }));
  if (requests.empty()) {
    return Error{source +
                 ": no requests (expected lines of arrival_s,prompt_tokens,output_tokens)"};
  }
  return requests;
}

Result<LengthDist> ParseLengthDist(std::string_view text, const char* flag) {
  const auto parse = [](std::string_view part, int64_t& value) {
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    return error == std::errc() && end == part.data() + part.size() && value >= 1 &&
           value <= kMaxTokens;
  };
  LengthDist dist;
  const size_t dash = text.find('-');
  const bool ok = dash == std::string_view::npos
                      ? parse(text, dist.low) && parse(text, dist.high)
                      : parse(text.substr(0, dash), dist.low) &&
                            parse(text.substr(dash + 1), dist.high) && dist.low <= dist.high;
  if (!ok) {
    return Error{std::string(flag) + " '" + std::string(text) + "': expected a token count N or " +
                 "a uniform range A-B (A <= B), each 1 to " + std::to_string(kMaxTokens) +
                 ", e.g. 512 or 256-1024"};
  }
  return dist;
}

std::string FormatLengthDist(const LengthDist& dist) {
  return dist.low == dist.high ? std::to_string(dist.low)
                               : std::to_string(dist.low) + "-" + std::to_string(dist.high);
}

}  // namespace stagecraft

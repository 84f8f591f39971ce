// What a command says, as data: its answer (the text `stagecraft` prints on stdout) and its
// diagnostics (notes, warnings and diagnoses, stderr) in the order it said them. The run library
// writes into a Transcript and never to a console; the command line replays it onto its two
// streams (cli/app.cc), so the interleaving of the two is exactly the order of saying.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

namespace stagecraft {

class Transcript {
 public:
  enum class Channel { kAnswer, kDiagnostic };
  struct Piece {
    Channel channel;
    std::string text;
  };

  Transcript();
  Transcript(const Transcript&) = delete;
  Transcript& operator=(const Transcript&) = delete;

  std::ostream& out() { return out_; }  // the answer
  std::ostream& err() { return err_; }  // notes, warnings, diagnoses

  // Consecutive text on one channel is one piece.
  const std::vector<Piece>& pieces() const { return pieces_; }
  // All the text of one channel.
  std::string Text(Channel channel) const;

 private:
  class Buffer : public std::streambuf {
   public:
    Buffer(Transcript* owner, Channel channel) : owner_(owner), channel_(channel) {}

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* data, std::streamsize size) override;

   private:
    Transcript* owner_;
    Channel channel_;
  };
  void Append(Channel channel, const char* data, size_t size);

  std::vector<Piece> pieces_;
  Buffer out_buffer_;
  Buffer err_buffer_;
  std::ostream out_;
  std::ostream err_;
};

}  // namespace stagecraft

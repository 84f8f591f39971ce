#include "commands/transcript.h"

namespace stagecraft {

Transcript::Transcript()
    : out_buffer_(this, Channel::kAnswer),
      err_buffer_(this, Channel::kDiagnostic),
      out_(&out_buffer_),
      err_(&err_buffer_) {}

std::string Transcript::Text(Channel channel) const {
  std::string text;
  for (const Piece& piece : pieces_) {
    if (piece.channel == channel) text += piece.text;
  }
  return text;
}

void Transcript::Append(Channel channel, const char* data, size_t size) {
  if (size == 0) return;
  if (pieces_.empty() || pieces_.back().channel != channel) pieces_.push_back({channel, ""});
  pieces_.back().text.append(data, size);
}

Transcript::Buffer::int_type Transcript::Buffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char character = traits_type::to_char_type(c);
  owner_->Append(channel_, &character, 1);
  return c;
}

std::streamsize Transcript::Buffer::xsputn(const char* data, std::streamsize size) {
  owner_->Append(channel_, data, static_cast<size_t>(size));
  return size;
}

}  // namespace stagecraft

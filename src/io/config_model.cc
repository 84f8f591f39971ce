// The YAML config's model section (doc/config.md, `model`): the uniform model, a layer list
// (with model.dims) or a transformer given by its dimensions (model.transformer).
#include <charconv>
#include <string>
#include <system_error>

#include "io/config_reader.h"
#include "io/hf_config.h"

namespace stagecraft::config_yaml {
namespace {

// model.transformer.attn_impl's names: the kernel model's table, and `flash` (LLM Foundry's name
// for FlashAttention-2, the first the configs knew) in front.
constexpr EnumTable<AttentionKernel> kAttentionImplNames =
    kAttentionKernelNames.WithFirst({"flash", AttentionKernel::kFlash});

constexpr char kLayerListExample[] =
    "a list of layer entries such as [{kind: embedding}, {attention: full}, {kind: head}]";
// More layers than any model has (the largest published have under 200); guards `repeat`
// against exhausting memory and the partition against grinding (its search grows with the
// square of the layers: 10^4 layers take 1.6 s in a Release build, 10^5 minutes).
constexpr size_t kMaxLayers = 10'000;

// A model name is printed in every table, plot and trace; a longer one is a mistake.
constexpr size_t kMaxModelNameBytes = 256;

Status ReadModelName(const Reader& reader, const Field& field, ModelSpec* model) {
  STAGECRAFT_RETURN_IF_ERROR(reader.String(field, &model->name));
  if (model->name.size() <= kMaxModelNameBytes) return Status::Ok();
  return reader.At(field, "the model name is " + std::to_string(model->name.size()) +
                              " bytes long (expected at most " +
                              std::to_string(kMaxModelNameBytes) + ")");
}

// DeepSeek-V4.1-Flash defaults (Csa2Dims); every width >= 1 except where 0 means "none".
Status ReadDims(const Reader& reader, const Field& field, Csa2Dims* dims) {
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(
      reader.ReadMap(field,
                     {{"hidden", CountInto(reader, &dims->hidden)},
                      {"hc_streams", CountInto(reader, &dims->hc_streams)},
                      {"vocab", CountInto(reader, &dims->vocab)},
                      {"heads", CountInto(reader, &dims->heads)},
                      {"head_dim", CountInto(reader, &dims->head_dim)},
                      {"query_latent", CountInto(reader, &dims->query_latent)},
                      {"output_groups", CountInto(reader, &dims->output_groups)},
                      {"output_group_dim", CountInto(reader, &dims->output_group_dim)},
                      {"window", CountInto(reader, &dims->window)},
                      {"kv_dim", CountInto(reader, &dims->kv_dim)},
                      {"indexer_heads", CountInto(reader, &dims->indexer_heads)},
                      {"indexer_key_dim", CountInto(reader, &dims->indexer_key_dim)},
                      {"top_k", CountInto(reader, &dims->top_k)},
                      {"candidate_blocks", CountInto(reader, &dims->candidate_blocks)},
                      {"routed_experts", CountInto(reader, &dims->routed_experts)},
                      {"shared_experts", IntInto(reader, 0, &dims->shared_experts)},
                      {"experts_per_token", CountInto(reader, &dims->experts_per_token)},
                      {"expert_width", CountInto(reader, &dims->expert_width)},
                      {"dense_width", IntInto(reader, 0, &dims->dense_width)},
                      {"indexer_trained", BoolInto(reader, &dims->indexer_trained)}},
                     &written));
  if (dims->experts_per_token <= dims->routed_experts) return Status::Ok();
  const Field* where = Find(written, "experts_per_token");
  if (where == nullptr) where = Find(written, "routed_experts");
  return reader.At(*where, "experts_per_token " + std::to_string(dims->experts_per_token) +
                               " exceeds routed_experts " + std::to_string(dims->routed_experts) +
                               " (a token picks its experts among the routed ones)");
}

// parts: {attention, dispatch, mlp, combine}: the forward of the layer in its four pieces
// (DeepSeek-V3 §3.2.1); the forward is their sum and dispatch + combine its all-to-all.
Status ReadLayerParts(const Reader& reader, const Field& field, LayerSpec* layer) {
  Time attention, dispatch, mlp, combine;
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(
      reader.ReadMap(field,
                     {{"attention", DurationInto(reader, Sign::kNonNegative, &attention)},
                      {"dispatch", DurationInto(reader, Sign::kNonNegative, &dispatch)},
                      {"mlp", DurationInto(reader, Sign::kNonNegative, &mlp)},
                      {"combine", DurationInto(reader, Sign::kNonNegative, &combine)}},
                     &written));
  layer->forward = attention + dispatch + mlp + combine;
  layer->all_to_all = dispatch + combine;
  if (layer->forward.ns() <= 0) {
    return reader.At(field,
                     "the parts add up to no time (expected attention, dispatch, mlp and "
                     "combine forward times, e.g. {attention: 2ms, dispatch: 1ms, mlp: "
                     "3ms, combine: 1ms})");
  }
  return Status::Ok();
}

// The checks across a layer entry's keys: parts and forward exclude each other; keys an
// embedding or head entry must not have; swa_only drops the default compress ratio.
Status CheckLayerEntry(const Reader& reader, const Written& written, LayerSpec* layer) {
  if (const Field* parts = Find(written, "parts")) {
    if (const Field* forward = Find(written, "forward")) {
      return reader.At(*forward,
                       "given together with parts (the forward is the sum of the parts; give "
                       "one of them)");
    }
    STAGECRAFT_RETURN_IF_ERROR(ReadLayerParts(reader, *parts, layer));
  }
  if (layer->kind != LayerKind::kDecoder) {
    for (const char* key : {"attention", "compress_ratio", "mlp", "kv_source", "index_source",
                            "candidate_source", "engram"}) {
      if (const Field* field = Find(written, key)) {
        return reader.At(*field,
                         std::string("applies to decoder layers only (this entry has kind: ") +
                             LayerKindName(layer->kind) + "; remove it)");
      }
    }
  }
  if (layer->attention == AttentionMode::kSwaOnly && Find(written, "compress_ratio") == nullptr) {
    layer->compress_ratio = 0;  // swa_only has no compressed KV
  }
  return Status::Ok();
}

// One entry of model.layers; `repeat` receives how many layers it stands for.
Status ReadLayerEntry(const Reader& reader, const Field& field, LayerSpec* layer, int32_t* repeat) {
  if (!field.value.IsMap()) {
    return reader.At(field, "found " + Describe(field.value) +
                                " (expected a layer entry, a map such as {attention: full, "
                                "compress_ratio: 1})");
  }
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(reader.ReadMap(
      field,
      {{"kind", EnumInto(reader, "layer kind", kLayerKindNames, &layer->kind)},
       {"attention", EnumInto(reader, "attention mode", kAttentionModeNames, &layer->attention)},
       {"compress_ratio", IntInto(reader, 0, &layer->compress_ratio)},
       {"mlp", EnumInto(reader, "mlp", kMlpKindNames, &layer->mlp)},
       {"repeat", CountInto(reader, repeat)},
       {"kv_source", IntInto(reader, 0, &layer->kv_source)},
       {"index_source", IntInto(reader, 0, &layer->index_source)},
       {"candidate_source", IntInto(reader, 0, &layer->candidate_source)},
       {"forward", DurationInto(reader, Sign::kNonNegative, &layer->forward)},
       {"input_grad", DurationInto(reader, Sign::kNonNegative, &layer->input_grad)},
       {"weight_grad", DurationInto(reader, Sign::kNonNegative, &layer->weight_grad)},
       {"activation_bytes", BytesInto(reader, &layer->activation_bytes)},
       {"weight_grad_bytes", BytesInto(reader, &layer->weight_grad_bytes)},
       {"engram", BoolInto(reader, &layer->engram)},
       {"parts", [](const Field&) { return Status::Ok(); }}},  // CheckLayerEntry reads them
      &written));
  return CheckLayerEntry(reader, written, layer);
}

// The N of a message that starts "layers[N]: " (ResolveSources' contract), else -1.
int32_t FailingLayer(const std::string& message) {
  constexpr std::string_view kPrefix = "layers[";
  if (message.compare(0, kPrefix.size(), kPrefix) != 0) return -1;
  int32_t index = -1;
  const char* begin = message.data() + kPrefix.size();
  const auto [stop, error] = std::from_chars(begin, message.data() + message.size(), index);
  return error == std::errc() && *stop == ']' ? index : -1;
}

// Derives and checks the shared-state sources; an error names the failing layer's entry.
Status ResolveLayers(const Reader& reader, const Field& field, const std::vector<YAML::Mark>& marks,
                     std::vector<LayerSpec>& layers) {
  const Status status = ResolveSources(layers);
  if (status.ok()) return status;
  const int32_t failing = FailingLayer(status.error().message);
  const bool known = failing >= 0 && failing < static_cast<int32_t>(marks.size());
  return Error{reader.Where(known ? marks[failing] : field.value.Mark()) + status.error().message};
}

// model.layers as a list: each entry expands to `repeat` layers (LayerSpec.line = its line).
Status ReadLayerList(const Reader& reader, const Field& field, ModelSpec* model) {
  if (!field.value.IsSequence() || field.value.size() == 0) {
    const std::string found = field.value.IsScalar() ? "found '" + field.value.Scalar() +
                                                           "', a layer count (for type: uniform)"
                                                     : "found " + Describe(field.value);
    return reader.At(field, found + " (expected " + kLayerListExample + ")");
  }
  std::vector<YAML::Mark> marks;  // where each layer was written
  for (const YAML::Node& entry : field.value) {
    const Field entry_field{YAML::Node(), entry,
                            field.path + "[" + std::to_string(model->layers.size()) + "]"};
    LayerSpec layer;
    int32_t repeat = 1;
    STAGECRAFT_RETURN_IF_ERROR(ReadLayerEntry(reader, entry_field, &layer, &repeat));
    if (model->layers.size() + static_cast<size_t>(repeat) > kMaxLayers) {
      return reader.At(entry_field, "the model would have more than " + std::to_string(kMaxLayers) +
                                        " layers (lower repeat)");
    }
    layer.line = entry.Mark().line + 1;
    for (int32_t copy = 0; copy < repeat; ++copy) {  // "model.layers[N]" for every layer
      reader.Locate(field.path + "[" + std::to_string(model->layers.size() + copy) + "]",
                    entry.Mark());
    }
    model->layers.insert(model->layers.end(), static_cast<size_t>(repeat), layer);
    marks.insert(marks.end(), static_cast<size_t>(repeat), entry.Mark());
  }
  model->num_layers = static_cast<int32_t>(model->layers.size());
  return ResolveLayers(reader, field, marks, model->layers);
}

// The uniform model: model.layers is a count; the layer-list keys are errors, except the run's
// shape next to a model from --hf-config (ParseOptions::model_from_hf).
Status FinishUniformModel(const Reader& reader, const Written& written, ModelSpec* model) {
  for (const char* key : {"seq_len", "micro_batch_size", "dims"}) {
    if (reader.options().model_from_hf && std::string_view(key) != "dims") continue;
    if (const Field* field = Find(written, key)) {
      const bool shape = std::string_view(key) != "dims";
      return reader.At(*field, shape ? "applies to layer-list and transformer models only (type: "
                                       "layers or transformer), or next to --hf-config"
                                     : "applies to layer-list models only (type: layers)");
    }
  }
  const Field* layers = Find(written, "layers");
  if (layers == nullptr) return Status::Ok();
  if (layers->value.IsSequence()) {
    return reader.At(*layers,
                     "found a list of layers, but the model type is 'uniform' (a layer list needs "
                     "type: layers; a uniform model takes a layer count)");
  }
  return reader.Int(*layers, 1, &model->num_layers);
}

// The layer-list model: model.layers is a list; the uniform model's costs are errors.
Status FinishLayerListModel(const Reader& reader, const Written& written, ModelSpec* model) {
  for (const char* key : {"forward", "input_grad", "weight_grad", "fb", "activation_bytes",
                          "weight_grad_bytes", "p2p_bytes"}) {
    if (const Field* field = Find(written, key)) {
      const std::string hint = std::string(key) == "p2p_bytes"
                                   ? "the bytes crossing a stage cut follow from model.dims"
                                   : "set it on a layer entry, or leave it out to derive it";
      return reader.At(*field,
                       "applies to the uniform model only (a layer-list model has per-layer "
                       "costs: " +
                           hint + ")");
    }
  }
  const Field* layers = Find(written, "layers");
  if (layers == nullptr) {
    return reader.At(written.at("type"),
                     "a layer-list model needs model.layers, " + std::string(kLayerListExample));
  }
  return ReadLayerList(reader, *layers, model);
}

// model.transformer: the dimensions of a dense decoder-only transformer.
Status ReadTransformer(const Reader& reader, const Field& field, TransformerSpec* spec) {
  const auto wide = [&reader](int64_t* out, int32_t least = 1) -> Apply {
    return [&reader, out, least](const Field& value) -> Status {
      int32_t number = 0;
      STAGECRAFT_RETURN_IF_ERROR(reader.Int(value, least, &number));
      *out = number;
      return Status::Ok();
    };
  };
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(reader.ReadMap(
      field,
      {{"layers", CountInto(reader, &spec->layers)},
       {"hidden", wide(&spec->hidden)},
       {"heads", wide(&spec->heads)},
       {"kv_heads", wide(&spec->kv_heads)},
       {"head_dim", wide(&spec->head_dim)},
       {"ffn_hidden", wide(&spec->ffn_hidden)},
       {"vocab", wide(&spec->vocab)},
       {"swiglu", BoolInto(reader, &spec->swiglu)},
       {"causal", BoolInto(reader, &spec->causal)},
       {"attn_impl",
        EnumInto(reader, "attention kernel", kAttentionImplNames, &spec->attention_kernel)},
       {"tied_embeddings", BoolInto(reader, &spec->tied_embeddings)},
       {"bias", BoolInto(reader, &spec->bias)},
       {"learned_positions", BoolInto(reader, &spec->learned_positions)},
       {"experts", wide(&spec->experts)},
       {"experts_per_token", wide(&spec->experts_per_token)},
       {"expert_ffn", wide(&spec->expert_ffn)},
       {"shared_experts", wide(&spec->shared_experts, 0)},
       {"dense_layers", IntInto(reader, 0, &spec->dense_layers)},
       {"q_lora_rank", wide(&spec->q_lora_rank)},
       {"kv_lora_rank", wide(&spec->kv_lora_rank)},
       {"qk_nope_dim", wide(&spec->qk_nope_dim)},
       {"qk_rope_dim", wide(&spec->qk_rope_dim)},
       {"v_head_dim", wide(&spec->v_head_dim)},
       {"weight_format",
        [&reader, spec](const Field& value) {
          return reader.Choice(value, "weight format", {"bf16", "fp8", "int8", "int4", "fp4"},
                               &spec->weight_format);
        }},
       {"kv_cache_dtype",
        [&reader, spec](const Field& value) {
          return reader.Choice(value, "KV cache dtype", {"bf16", "fp8"}, &spec->kv_cache_dtype);
        }},
       {"sliding_window", wide(&spec->sliding_window)},
       {"sliding_window_layers", IntInto(reader, 0, &spec->window_layers)}},
      &written));
  for (const char* key : {"layers", "hidden", "heads", "vocab"}) {
    if (Find(written, key) == nullptr) {
      return reader.At(field, std::string("needs '") + key +
                                  "' (a transformer is given by layers, hidden, heads and vocab; "
                                  "kv_heads, head_dim, ffn_hidden, swiglu, causal optional)");
    }
  }
  if (spec->layers > kMaxTransformerLayers) {
    return reader.At(*Find(written, "layers"),
                     std::to_string(spec->layers) + " layers is above the limit of " +
                         std::to_string(kMaxTransformerLayers) +
                         " (more than any published model; expected a real layer count)");
  }
  if (spec->head_dim == 0 && spec->hidden % spec->heads != 0) {
    return reader.At(*Find(written, "heads"),
                     std::to_string(spec->heads) + " heads do not divide hidden " +
                         std::to_string(spec->hidden) + " (give head_dim explicitly)");
  }
  if (spec->experts > 0 && (spec->experts_per_token < 1 || spec->expert_ffn < 1 ||
                            spec->experts_per_token > spec->experts)) {
    return reader.At(*Find(written, "experts"),
                     "a mixture of experts needs experts_per_token (1.." +
                         std::to_string(spec->experts) + ") and expert_ffn");
  }
  if (spec->kv_lora_rank > 0 &&
      (spec->qk_nope_dim < 1 || spec->qk_rope_dim < 1 || spec->v_head_dim < 1)) {
    return reader.At(*Find(written, "kv_lora_rank"),
                     "latent attention needs qk_nope_dim, qk_rope_dim and v_head_dim");
  }
  // A window on every layer unless sliding_window_layers says how many (interleaved models).
  const Field* window_layers = Find(written, "sliding_window_layers");
  if (window_layers != nullptr && Find(written, "sliding_window") == nullptr) {
    return reader.At(*window_layers,
                     "needs sliding_window (the window's tokens) next to it, e.g. "
                     "sliding_window: 4096");
  }
  if (window_layers == nullptr && spec->sliding_window > 0) spec->window_layers = spec->layers;
  if (spec->window_layers > spec->layers) {
    return reader.At(*window_layers, std::to_string(spec->window_layers) +
                                         " sliding-window layers, more than the model's " +
                                         std::to_string(spec->layers) + " (expected 0.." +
                                         std::to_string(spec->layers) + ")");
  }
  if (spec->sliding_window > 0 && spec->kv_lora_rank > 0) {
    return reader.At(*Find(written, "sliding_window"),
                     "a sliding window applies to MHA/GQA/MQA layers; this model's attention is "
                     "latent (kv_lora_rank): drop sliding_window");
  }
  if (spec->attention_kernel != AttentionKernel::kFlash && !spec->causal) {
    return reader.At(*Find(written, "attn_impl"),
                     "attn_impl names a fused attention kernel, but this model's attention "
                     "is the unfused path (causal: false): set causal: true, or drop attn_impl");
  }
  if (spec->kv_heads > 0 && spec->heads % spec->kv_heads != 0) {
    return reader.At(*Find(written, "kv_heads"),
                     std::to_string(spec->kv_heads) + " KV heads do not divide " +
                         std::to_string(spec->heads) + " query heads (GQA groups must be equal)");
  }
  return Status::Ok();
}

// The transformer model: model.transformer holds its dimensions; costs are derived.
Status FinishTransformerModel(const Reader& reader, const Field& field, const Written& written,
                              ModelSpec* model) {
  for (const char* key : {"forward", "input_grad", "weight_grad", "fb", "activation_bytes",
                          "weight_grad_bytes", "p2p_bytes", "layers", "dims"}) {
    if (const Field* found = Find(written, key)) {
      return reader.At(*found,
                       "does not apply to a transformer model (its costs, layers and payload "
                       "follow from model.transformer)");
    }
  }
  const Field* spec = Find(written, "transformer");
  if (spec == nullptr) {
    return reader.At(field,
                     "type: transformer needs model.transformer, e.g. {layers: 24, hidden: 2304, "
                     "heads: 24, vocab: 51200}");
  }
  return ReadTransformer(reader, *spec, &model->transformer);
}

}  // namespace

// type: uniform (the default), layers or transformer; a list under `layers` with no type means
// layers.
Status ReadModel(const Reader& reader, const Field& field, ModelSpec* model) {
  std::string type;
  const Apply read_type = [&reader, &type](const Field& value) {
    return reader.Choice(value, "model type", {"uniform", "layers", "transformer"}, &type);
  };
  const Apply later = [](const Field&) { return Status::Ok(); };  // once the type is known
  Written written;
  STAGECRAFT_RETURN_IF_ERROR(reader.ReadMap(
      field,
      {{"name",
        [&reader, model](const Field& value) { return ReadModelName(reader, value, model); }},
       {"type", read_type},
       {"layers", later},
       {"seq_len", CountInto(reader, &model->seq_len)},
       {"micro_batch_size", CountInto(reader, &model->micro_batch_size)},
       {"dims",
        [&reader, model](const Field& value) { return ReadDims(reader, value, &model->dims); }},
       {"forward", DurationInto(reader, Sign::kPositive, &model->forward)},
       {"input_grad", DurationInto(reader, Sign::kPositive, &model->input_grad)},
       {"weight_grad", DurationInto(reader, Sign::kNonNegative, &model->weight_grad)},
       {"fb", DurationInto(reader, Sign::kPositive, &model->fb)},
       {"activation_bytes", BytesInto(reader, &model->activation_bytes)},
       {"weight_grad_bytes", BytesInto(reader, &model->weight_grad_bytes)},
       {"p2p_bytes", BytesInto(reader, &model->p2p_bytes)},
       {"transformer", later}},
      &written));
  if (type == "transformer") return FinishTransformerModel(reader, field, written, model);
  if (const Field* transformer = Find(written, "transformer")) {
    return reader.At(*transformer, "applies to type: transformer only (set model.type)");
  }
  const Field* layers = Find(written, "layers");
  const bool layer_list =
      type == "layers" || (type.empty() && layers != nullptr && layers->value.IsSequence());
  return layer_list ? FinishLayerListModel(reader, written, model)
                    : FinishUniformModel(reader, written, model);
}

}  // namespace stagecraft::config_yaml

# stagecraft plan: llama-3-70b, torchtitan tp 1 pp 1 vpp 1 dp 16 cp 4 ep 1 mbs 1 m 32 1f1b recompute none zero 3
# on h100 nodes of 8 GPUs (64 GPUs in all); set your dataset and tokenizer in the job config.
# torchtitan's Python config registry (main after the 0.2 releases; read at b5bcd76c): launch-registry.sh
# runs `-m torchtitan.train --module stagecraft_plan --config stagecraft_plan` with this folder on PYTHONPATH.
# The model's dimensions: layers 80, dim 8192, heads 64, kv heads 8, ffn 28672, vocab 128256.

from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC
from torchtitan.models.llama3 import model_registry
from torchtitan.models.llama3.config_registry import llama3_70b
from torchtitan.trainer import Trainer


def stagecraft_plan() -> Trainer.Config:
    config = llama3_70b()
    config.model_spec = model_registry("70B")
    config.training.max_context_length = 8192
    config.training.num_tokens_per_microbatch_per_dp_rank = 8192
    config.training.num_tokens_per_train_step = 4194304
    config.training.mixed_precision_param = "bfloat16"
    config.parallelism.data_parallel_replicate_degree = 1
    config.parallelism.data_parallel_shard_degree = 16
    config.parallelism.tensor_parallel_degree = 1
    config.parallelism.context_parallel_degree = 4
    config.parallelism.expert_parallel_degree = 1
    config.parallelism.pipeline_parallel_degree = 1
    config.activation_checkpoint = None
    config.compile.enable = True
    config.compile.components = ["model", "loss"]
    config.compile.enable_async_tensor_parallel = False
    return config

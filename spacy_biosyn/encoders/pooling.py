"""A Hugging Face model's last hidden states pooled to one vector per
text, as a torch module: what TransformerEncoder trains and encodes with,
and what its ONNX export traces. Apart from transformer.py so that only
running a PyTorch encoder imports torch."""
import torch


class Pooled(torch.nn.Module):
    def __init__(self, model: torch.nn.Module, pooling: str):
        super().__init__()
        self.model = model
        self.pooling = pooling

    def forward(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        # Positional, so that the ONNX tracer sees the inputs; not every model takes token types.
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        if self.pooling == "cls":
            return hidden[:, 0]
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)

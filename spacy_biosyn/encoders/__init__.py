"""Dense encoders: strings to vectors (PyTorch transformers, ONNX Runtime)."""

"""The reality check: vramsym's prediction next to what PyTorch allocates (optional extra [measure])."""

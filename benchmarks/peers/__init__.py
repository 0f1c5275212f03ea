"""The peers' generation rates, each library in a process of its own (benchmarks/peer_rates.py)."""

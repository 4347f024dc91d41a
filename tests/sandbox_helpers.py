"""Helpers for the tests that run real submissions in real workers (hostile, loader).

Submissions are written into a test's tmp_path. `GOOD` is a correct `attention`
submission (numpy only); `WRONG` defines the same names with wrong answers.
Process helpers look at /proc to prove that nothing a worker started is left.
"""
import json
import os
import textwrap
import time

GOOD = textwrap.dedent('''\
    import math
    import numpy as np


    def get_scores(matrix, vector):
        return matrix @ vector


    def scale_scores(scores, n):
        return scores / math.sqrt(n)


    def get_attention_weights(scores):
        scores = np.asarray(scores)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


    def get_context_vector(attention_weights, hidden_encoder_matrix):
        return attention_weights @ hidden_encoder_matrix


    def context_vector(encoder_states, decoder_state):
        n = encoder_states.shape[-1]
        w = get_attention_weights(scale_scores(get_scores(encoder_states, decoder_state), n))
        return get_context_vector(w, encoder_states)


    def self_attention(X, W_Q, W_K, W_V):
        Q, K, V = X @ W_Q, X @ W_K, X @ W_V
        return get_attention_weights(Q @ K.T / math.sqrt(K.shape[-1])) @ V


    def self_attention_token(X, W_Q, W_K, W_V, i):
        return self_attention(X, W_Q, W_K, W_V)[i]


    def split_heads(W, num_heads):
        if num_heads <= 0 or W.shape[-1] % num_heads:
            raise ValueError("num_heads must divide the width")
        hs = W.shape[-1] // num_heads
        return [W[:, h * hs:(h + 1) * hs] for h in range(num_heads)]


    def head_weight_shape(d_model, num_heads):
        return (d_model, d_model // num_heads)


    def head_output_shape(seq_len, d_model, num_heads):
        return (seq_len, d_model // num_heads)


    def concat_shape(seq_len, d_model, num_heads):
        return (seq_len, d_model)


    def w_o_shape(d_model, num_heads):
        return (num_heads * (d_model // num_heads), d_model)


    def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads):
        heads = [self_attention(X, q, k, v) for q, k, v in
                 zip(split_heads(W_Q, num_heads), split_heads(W_K, num_heads), split_heads(W_V, num_heads))]
        return np.concatenate(heads, axis=-1) @ W_O
''')

# The same names, every answer wrong (right shapes where cheap, wrong values; no exceptions).
WRONG = textwrap.dedent('''\
    import numpy as np


    def get_scores(matrix, vector):
        return np.zeros(len(matrix)) + 0.3


    def scale_scores(scores, n):
        return np.asarray(scores) * 0 + 0.3


    def get_attention_weights(scores):
        return np.asarray(scores) * 0 + 0.3


    def get_context_vector(attention_weights, hidden_encoder_matrix):
        return np.zeros(np.shape(hidden_encoder_matrix)[-1]) + 0.3


    def context_vector(encoder_states, decoder_state):
        return np.zeros(np.shape(encoder_states)[-1]) + 0.3


    def self_attention(X, W_Q, W_K, W_V):
        return np.zeros((len(X), np.shape(W_V)[-1])) + 0.3


    def self_attention_token(X, W_Q, W_K, W_V, i):
        return np.zeros(np.shape(W_V)[-1]) + 0.3


    def split_heads(W, num_heads):
        return [np.zeros((1, 1))]


    def head_weight_shape(d_model, num_heads):
        return (1, 1)


    def head_output_shape(seq_len, d_model, num_heads):
        return (1, 1)


    def concat_shape(seq_len, d_model, num_heads):
        return (1, 1)


    def w_o_shape(d_model, num_heads):
        return (1, 1)


    def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads):
        return np.zeros((len(X), np.shape(W_O)[-1])) + 0.3
''')

H_E = [[0.64, -0.27, 0.89, -0.12], [-0.45, 0.33, 0.71, 0.08],
       [0.19, -0.94, 0.56, 0.37], [0.03, 0.85, -0.41, 0.76]]
H_D1 = [0.45, 0.11, -0.88, 0.67]
CONTEXT_D1 = [0.095787, 0.149822, 0.246732, 0.38855]  # HOMEWORK.md, rounded to 6 places


def write(directory, name, text):
    path = os.path.join(str(directory), name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def notebook(cells):
    """nbformat-4 JSON for a list of cells: a str is a code cell, ("markdown", text) a markdown cell."""
    out = []
    for c in cells:
        kind, src = ("code", c) if isinstance(c, str) else c
        cell = {"cell_type": kind, "metadata": {}, "source": src.splitlines(True)}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        out.append(cell)
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": out})


# ------------------------------------------------------------------ processes

def _stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return rest[0], int(rest[1])  # state, ppid
    except (OSError, IndexError, ValueError):
        return None, None


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def live_pids():
    """Pids of processes that are not zombies."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            state, _ = _stat(int(p))
            if state not in (None, "Z", "X"):
                out.append(int(p))
    return out


def descendants(root):
    """Live pids whose ancestry includes `root` (not root itself)."""
    parents = {}
    for pid in live_pids():
        _, ppid = _stat(pid)
        if ppid is not None:
            parents[pid] = ppid
    out = []
    for pid in parents:
        p, seen = parents.get(pid), 0
        while p and p != root and seen < 64:
            p, seen = parents.get(p), seen + 1
        if p == root:
            out.append(pid)
    return sorted(out)


def with_marker(marker):
    """Live processes (other than this one) whose command line contains `marker`."""
    me = os.getpid()
    return [p for p in live_pids() if p != me and marker in cmdline(p)]


def wait_until(predicate, timeout=2.0, step=0.05):
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > end:
            return value
        time.sleep(step)

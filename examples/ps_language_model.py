"""A word-level LSTM language model trained on parameter servers, with its large
tables sharded over them: the setting of the TensorFlow paper's language-modelling
experiment (Abadi et al., OSDI 2016, section 6.4, Figure 9), at toy scale.

    python examples/ps_language_model.py [--softmax sampled|full] [--num-ps 2]
                                         [--num-workers 2] [--steps 150]
                                         [--vocab-size 10000] [--num-sampled 64]

The text is the Python documentation that ships with Python (`pydoc_data.topics`):
the topics are concatenated in key order, lowercased and split into words, numbers and
single punctuation marks; the last 10% of the tokens are held out. The vocabulary is
the `--vocab-size` most frequent tokens of the training part plus ``<unk>`` (every
other token), with ids sorted by decreasing frequency, as the log-uniform (Zipfian)
candidate sampler of `sampled_softmax_loss` assumes. The whole corpus has only about
3,600 distinct tokens, so the default 10,000 keeps all of them and ``<unk>`` stands for
held-out words never seen in training.

Model: embedding [classes, 128] -> LSTM(128) over 20 steps -> softmax weights
[classes, 128] and biases [classes]. The embedding and the softmax weights are big
enough for the strategy's `MinSizePartitioner` to split them by rows over the
parameter servers (`ShardedVariable`s); the LSTM's weights stay whole. A step looks up
only the embedding rows of its batch (`nn.embedding_lookup`: the rows travel, and the
gradient is an `IndexedSlices` of them). With ``--softmax sampled`` the loss is
`nn.sampled_softmax_loss` (Jean et al., 2015) over the targets and `--num-sampled`
classes shared by the batch, so a step reads and updates only those rows of the
softmax weights; ``--softmax full`` computes every class's logit, reading and
updating the whole matrix each step.

Training uses the graph API: `ClusterCoordinator.schedule` of a step function taking
two int64 numpy arrays [batch, time] (inputs and next-word targets, windows at random
offsets), asynchronously on the workers. Perplexity on the held-out text (full
softmax, each window of 20 tokens starting from a zero state) is computed in this
process before and after training. words/s counts target tokens of the steps after
the first ones (compilation).
"""

import argparse
import collections
import re
import time

import numpy as np

import mylib as ml
from mylib.distribute.coordinator import ClusterCoordinator

UNK = "<unk>"
# Words and numbers (letters, digits, underscores), or one punctuation mark.
_TOKEN = re.compile(r"[a-z0-9_]+|[^\sa-z0-9_]")


def load_corpus(vocab_size, held_out=0.1):
    """Token ids of the training and held-out parts and the vocabulary (ids sorted by
    decreasing training frequency; ``<unk>`` takes the rank of its own count)."""
    from pydoc_data.topics import topics

    text = "\n".join(topics[k] for k in sorted(topics)).lower()
    tokens = _TOKEN.findall(text)
    cut = int(len(tokens) * (1 - held_out))
    counts = collections.Counter(tokens[:cut])
    kept = counts.most_common(vocab_size)
    unk_count = len(tokens[:cut]) - sum(n for _, n in kept)
    ranked = sorted(kept + [(UNK, unk_count)], key=lambda wn: -wn[1])  # stable
    vocab = [w for w, _ in ranked]
    index = {w: i for i, w in enumerate(vocab)}
    unk = index[UNK]
    ids = np.array([index.get(t, unk) for t in tokens], dtype=np.int64)
    return ids[:cut], ids[cut:], vocab


def random_windows(ids, batch_size, num_steps, rng):
    """Inputs and next-token targets, int64 [batch_size, num_steps], at random offsets."""
    starts = rng.integers(0, len(ids) - num_steps - 1, batch_size)
    idx = starts[:, None] + np.arange(num_steps)
    return ids[idx], ids[idx + 1]


def held_out_windows(ids, num_steps):
    """The held-out text cut into consecutive windows [n, num_steps] (and targets)."""
    n = (len(ids) - 1) // num_steps
    x = ids[:n * num_steps].reshape(n, num_steps)
    y = ids[1:n * num_steps + 1].reshape(n, num_steps)
    return x, y


class LanguageModel:
    """The model's variables (created under the strategy's scope) and its graphs: the
    training step to schedule on the workers, and the full-softmax evaluation run in
    this process."""

    def __init__(self, num_classes, embedding_dim=128, units=128, num_steps=20,
                 softmax="sampled", num_sampled=64, learning_rate=5e-3, seed=0):
        if softmax not in ("sampled", "full"):
            raise ValueError(f"softmax must be 'sampled' or 'full'; got {softmax!r}")
        self.num_classes, self.units, self.num_steps = num_classes, units, num_steps
        self.softmax, self.num_sampled, self.seed = softmax, num_sampled, seed
        init = ml.initializers
        self.embedding = ml.Variable(
            init.RandomUniform(-0.1, 0.1, seed=seed)([num_classes, embedding_dim]),
            name="embedding")
        self.lstm = ml.layers.LSTM(units, return_sequences=True, name="lstm")
        self.softmax_w = ml.Variable(
            init.RandomNormal(0.0, units ** -0.5, seed=seed + 1)([num_classes, units]),
            name="softmax_w")
        self.softmax_b = ml.Variable(np.zeros(num_classes, np.float32), name="softmax_b")
        # The evaluation graph; building it also builds the LSTM's weights.
        self.eval_x = ml.placeholder(ml.int64, [None, num_steps], name="eval_inputs")
        self.eval_y = ml.placeholder(ml.int64, [None, num_steps], name="eval_targets")
        logits = self._full_logits(self._hidden(self.eval_x))
        self.eval_nll = ml.reduce_sum(ml.nn.sparse_softmax_cross_entropy_with_logits(
            labels=ml.reshape(self.eval_y, [-1]), logits=logits))
        self.optimizer = ml.optimizers.Adam(learning_rate=learning_rate)
        self.var_list = ml.distribute.sharded_variable.expand_sharded(
            [self.embedding, self.softmax_w, self.softmax_b] + self.lstm.trainable_weights)
        self.optimizer.build(self.var_list)  # its slots exist before the initializer
        self.init = ml.global_variables_initializer()

    def _hidden(self, x):
        """LSTM outputs [batch * time, units] for int64 inputs [batch, time]."""
        # Looked up with flat ids, then shaped [batch, time, dim] by constants.
        rows = ml.nn.embedding_lookup(self.embedding, ml.reshape(x, [-1]))
        h = self.lstm(ml.reshape(rows, [-1, self.num_steps, self.embedding.shape[1]]))
        return ml.reshape(h, [-1, self.units])

    def _full_logits(self, h):
        return ml.matmul(h, self.softmax_w, transpose_b=True) + self.softmax_b

    def train_step(self, x, y):
        """The step function for `ClusterCoordinator.schedule`: (mean loss, update)."""
        h = self._hidden(x)
        labels = ml.reshape(y, [-1])
        if self.softmax == "sampled":
            losses = ml.nn.sampled_softmax_loss(
                self.softmax_w, self.softmax_b, ml.reshape(labels, [-1, 1]), h,
                num_sampled=self.num_sampled, num_classes=self.num_classes,
                seed=self.seed)
        else:
            losses = ml.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=self._full_logits(h))
        loss = ml.reduce_mean(losses)
        return loss, self.optimizer.minimize(loss, var_list=self.var_list)

    def perplexity(self, session, x, y, batch_size=128):
        """exp(mean negative log-likelihood per token), full softmax."""
        nll = 0.0
        for i in range(0, len(x), batch_size):
            nll += float(session.run(self.eval_nll, {self.eval_x: x[i:i + batch_size],
                                                     self.eval_y: y[i:i + batch_size]}))
        return float(np.exp(nll / x.size))


def make_strategy(num_ps, num_workers):
    # Tables of 1 MiB or more are split by rows over the parameter servers (at most one
    # shard per server); the LSTM's kernels (256 KiB each) stay whole.
    part = ml.distribute.MinSizePartitioner(min_shard_bytes=512 << 10, max_shards=num_ps)
    return ml.distribute.ParameterServerStrategy(num_ps=num_ps, num_workers=num_workers,
                                                 variable_partitioner=part)


def build(strategy, num_classes, **model_kwargs):
    """The model in a new graph under `strategy`, initialized on the parameter servers;
    returns (model, session of its graph, coordinator)."""
    g = ml.Graph()
    with g.as_default(), strategy.scope():
        ml.set_random_seed(model_kwargs.get("seed", 0))  # the LSTM's initializers too
        model = LanguageModel(num_classes, **model_kwargs)
    session = ml.layers.backend.get_session(g)
    session.run(model.init)
    return model, session, ClusterCoordinator(strategy)


def train(model, coord, ids, steps, batch_size, rng, warmup=None):
    """Schedules `steps` steps (one in flight per worker) and waits for them; returns
    (final losses, words/s over the steps after the `warmup` first ones)."""
    warmup = 2 * coord.strategy.num_workers if warmup is None else warmup
    warmup = min(warmup, steps)
    for _ in range(warmup):  # compiles the step on each worker
        coord.schedule(model.train_step, args=random_windows(ids, batch_size,
                                                              model.num_steps, rng))
    coord.join()
    t0 = time.perf_counter()
    rvs = [coord.schedule(model.train_step,
                          args=random_windows(ids, batch_size, model.num_steps, rng))
           for _ in range(steps - warmup)]
    coord.join()
    seconds = time.perf_counter() - t0
    losses = [float(rv.fetch()[0]) for rv in rvs[-20:]]
    words = (steps - warmup) * batch_size * model.num_steps
    return losses, (words / seconds if words else float("nan"))


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Word-level LSTM language model on parameter servers.")
    p.add_argument("--softmax", default="sampled", choices=["sampled", "full"],
                   help="training loss: sampled softmax (default) or full softmax")
    p.add_argument("--num-sampled", type=int, default=64,
                   help="classes sampled per batch (default 64)")
    p.add_argument("--num-ps", type=int, default=2, help="parameter servers (default 2)")
    p.add_argument("--num-workers", type=int, default=2, help="workers (default 2)")
    p.add_argument("--steps", type=int, default=150, help="training steps (default 150)")
    p.add_argument("--batch-size", type=int, default=32, help="windows per step (32)")
    p.add_argument("--num-steps", type=int, default=20, help="unrolled time steps (20)")
    p.add_argument("--units", type=int, default=128, help="LSTM units and embedding size")
    p.add_argument("--vocab-size", type=int, default=10000,
                   help="most frequent training tokens kept (default 10000)")
    p.add_argument("--lr", type=float, default=5e-3, help="Adam learning rate")
    p.add_argument("--seed", type=int, default=0, help="weights and batches seed")
    args = p.parse_args(argv)

    train_ids, test_ids, vocab = load_corpus(args.vocab_size)
    print(f"pydoc topics: {len(train_ids):,} training and {len(test_ids):,} held-out "
          f"tokens; {len(vocab):,} classes ({len(vocab) - 1:,} tokens + {UNK})")
    x_te, y_te = held_out_windows(test_ids, args.num_steps)
    strategy = make_strategy(args.num_ps, args.num_workers)
    print(strategy)
    try:
        t0 = time.perf_counter()
        model, session, coord = build(
            strategy, len(vocab), embedding_dim=args.units, units=args.units,
            num_steps=args.num_steps, softmax=args.softmax, num_sampled=args.num_sampled,
            learning_rate=args.lr, seed=args.seed)
        for name, v in (("embedding", model.embedding), ("softmax_w", model.softmax_w)):
            shards = getattr(v, "variables", [v])
            print(f"{name} {v.shape.as_list()}: " + ", ".join(
                f"{s.shape.as_list()[0]} rows on {s.device.split('/device')[0]}"
                for s in shards))
        before = model.perplexity(session, x_te, y_te)
        print(f"held-out perplexity before training {before:.1f} "
              f"(cluster start-up and first evaluation {time.perf_counter() - t0:.1f} s)")
        rng = np.random.default_rng(args.seed)
        t1 = time.perf_counter()
        losses, wps = train(model, coord, train_ids, args.steps, args.batch_size, rng)
        seconds = time.perf_counter() - t1
        applied = int(session.run(model.optimizer.iterations))
        after = model.perplexity(session, x_te, y_te)
    finally:
        strategy.close()
    print(f"{args.steps} steps ({args.softmax} softmax) in {seconds:.1f} s: "
          f"{wps:,.0f} words/s after warm-up; steps applied {applied}; "
          f"last training loss {np.mean(losses):.3f}")
    print(f"held-out perplexity after training {after:.1f}")
    return {"perplexity_before": before, "perplexity_after": after, "words_per_sec": wps,
            "applied_steps": applied, "seconds": seconds}


if __name__ == "__main__":
    main()

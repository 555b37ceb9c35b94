"""Layer 1, fingerprinting: from raw text to fixed-size, deterministic fingerprints.

* `normalize`: the canonical text every feature is computed from (NFKC, case fold, spaces);
* `shingles`: the readable definition of features (character k-grams, word n-grams) and
  exact Jaccard;
* `hashing`: seeded MurmurHash3 for exact-text and id hashes (never Python's `hash()`);
* `kernels`: the compiled pass that normalises, hashes, and builds SimHash and MinHash,
  over compiled kernels kept by concept: `hash_kernels` (MurmurHash3, `fmix64`),
  `text_kernels` (folding, normalisation, feature hashes), `minhash_kernels`,
  `simhash_kernels` and `feature_set_kernels` (the distinct feature set);
* `compact_set`: a small document's set, coded in its sketch (over `bitstream`: bit counts
  and bit streams in words), and `set_estimate`: the Jaccard estimate against it;
  `odd_sketch`: a mid-sized document's odd sketch and its estimate; `sketch_forms`: which
  sizes keep which form;
* `fingerprinter`: `Fingerprinter.batch(texts)` -> `Fingerprints`, the layer's interface.

Importing the package is cheap; the compiled kernels load with `fingerprinter`/`kernels`.
"""

"""The chunked read/write engine: selections and their projections onto the chunk grid,
reads and writes of regular, sharded and object (variable-length) arrays, and fancy
indexing. It works on a store, a codec chain and a selection; it knows nothing of nodes."""

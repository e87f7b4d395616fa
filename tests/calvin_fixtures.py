"""Shared CALVIN test data."""

# scene_obs of the first of the 1000 public evaluation chains (CALVIN's own numbers): the table in its
# evaluation layout, used as a reference by the chain-generation test and as a start state elsewhere.
CHAIN0_SCENE_OBS = [
    0.28,
    0.22,
    0.0,
    0.088,
    1.0,
    1.0,
    -0.240851662,
    0.0924044687,
    0.460990009,
    0.0,
    0.0,
    1.8859410064104645,
    0.229995412,
    -0.11999514,
    0.45999001,
    0.0,
    0.0,
    1.488143437705632,
    0.070341633,
    0.0924044687,
    0.460990009,
    0.0,
    0.0,
    1.4683986863194542,
]

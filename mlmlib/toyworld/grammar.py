"""mlmlib.toyworld.grammar - the toy world's grammar: its words, its slots and their order.

Does: hold the three tables :class:`~mlmlib.toyworld.ToyWorld` is built from. ``LEXICON``
lists each slot's words, most likely first (a slot writes its words with Zipf weights
``1, 1/2, 1/3, ...``); ``STATES`` names the hidden states (the grammatical slots) and the
lexicon entry each one writes from; ``TRANSITIONS`` gives the probability of each slot after
another (every sentence starts at ``det_s`` and stops after ``end``, which writes "."); and
``MAX_LEN`` caps the sentences' length, because the exact computations grow with its square.

Does not: compute anything (:mod:`mlmlib.toyworld.world` turns these tables into the
tensors of a hidden Markov model and does the inference) or check the tables (the world
checks that each slot's next-slot probabilities and its stop probability sum to 1).

>>> [name for name, _ in STATES][:4]
['det_s', 'adj_s', 'animal', 'person']
>>> TRANSITIONS["animal"]
{'verb_i_animal': 0.55, 'verb_t_animal': 0.45}
"""

# The lexicon: each slot's words, most likely first. Some words belong to several slots
# ("sat", "watched"), which is what makes the posterior interesting.
LEXICON = {
    "det": "the a this that every my your our their some".split(),
    "adj": ("small big old young little happy sad quiet loud tired hungry clever lazy brave "
            "gentle angry calm busy shy proud sleepy friendly grumpy curious silly kind wild "
            "noisy fluffy tiny huge lucky patient nervous cheerful bored polite").split(),
    "animal": ("cat dog bird horse cow mouse rabbit fox duck goat sheep pig owl frog bear "
               "lion tiger wolf deer hen parrot hamster turtle snake monkey donkey puppy "
               "kitten goose squirrel").split(),
    "person": ("boy girl man woman teacher doctor farmer baker child king queen student "
               "painter singer driver nurse pilot cook sailor writer judge poet clown "
               "grandmother uncle aunt neighbour friend stranger guard").split(),
    "verb_i_animal": ("sat slept barked purred ran jumped hid waited played growled squeaked "
                      "howled hopped rested").split(),
    "verb_i_person": ("sat slept laughed sang ran waited smiled danced worked cried rested "
                      "studied shouted").split(),
    "verb_t_animal": "chased ate watched found caught smelled licked dropped bit".split(),
    "verb_t_person": ("read painted watched found wrote cooked bought opened carried cleaned "
                      "fixed washed").split(),
    "adv": "quietly quickly happily slowly loudly again alone together".split(),
    "prep": "on under near behind beside in by across inside over".split(),
    "object": ("mat table box hat book chair bed garden window door floor wall rug basket "
               "cake letter cup ball bone apple bench tree fence roof kitchen river road "
               "bridge car boat sofa lamp pillow blanket field hill shed stove shelf").split(),
    "end": ["."],
}

# (state name, the lexicon entry it emits from)
STATES = [
    ("det_s", "det"), ("adj_s", "adj"), ("animal", "animal"), ("person", "person"),
    ("verb_i_animal", "verb_i_animal"), ("verb_i_person", "verb_i_person"),
    ("verb_t_animal", "verb_t_animal"), ("verb_t_person", "verb_t_person"),
    ("adv", "adv"), ("prep", "prep"), ("det_o", "det"), ("adj_o", "adj"),
    ("object", "object"), ("end", "end"),
]

# transition probabilities; every sentence starts at det_s and stops after "end"
TRANSITIONS = {
    "det_s": {"adj_s": 0.4, "animal": 0.3, "person": 0.3},
    "adj_s": {"adj_s": 0.15, "animal": 0.425, "person": 0.425},
    "animal": {"verb_i_animal": 0.55, "verb_t_animal": 0.45},
    "person": {"verb_i_person": 0.5, "verb_t_person": 0.5},
    "verb_i_animal": {"prep": 0.65, "adv": 0.2, "end": 0.15},
    "verb_i_person": {"prep": 0.6, "adv": 0.25, "end": 0.15},
    "verb_t_animal": {"det_o": 1.0},
    "verb_t_person": {"det_o": 1.0},
    "adv": {"prep": 0.5, "end": 0.5},
    "prep": {"det_o": 1.0},
    "det_o": {"adj_o": 0.35, "object": 0.65},
    "adj_o": {"adj_o": 0.1, "object": 0.9},
    "object": {"end": 0.8, "prep": 0.2},
    "end": {},
}


# the exact computations (the unigram shares, the "left" floor) grow with max_len squared
MAX_LEN = 200

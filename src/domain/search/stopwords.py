"""English function words: articles, pronouns, auxiliaries, prepositions, conjunctions and
question words. They hold a sentence together but tell no card from another, so the search
vocabulary (cardvault.domain.search.vocabulary) keeps no count of them."""

from __future__ import annotations

_WORDS = (
    # articles and determiners
    "a an the this that these those some any each every either neither no all both such "
    # pronouns
    "i me my mine myself we us our ours ourselves you your yours yourself yourselves "
    "he him his himself she her hers herself it its itself they them their theirs themselves "
    # auxiliaries and modals
    "am is are was were be been being have has had having do does did doing done "
    "will would shall should can could may might must "
    # prepositions
    "about above across after against along among around at before behind below beneath beside "
    "between beyond by down during except for from in inside into near of off on onto out outside "
    "over past since through throughout to toward towards under until up upon with within without "
    # conjunctions
    "and but or nor so yet if then than because while although though unless whether "
    # question words
    "how what why which who whom whose when where "
    # other common function words
    "as not there here also just very too only own same other more most"
)
STOP_WORDS = frozenset(_WORDS.split())

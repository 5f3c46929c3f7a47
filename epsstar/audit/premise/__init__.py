"""The premise of an audit, checked: that ``--train`` and ``--population`` come from one
distribution, so that the model's loss gap measures memorisation (:mod:`.baseline`), and the
readings that need the records themselves: user-level Epsilon* (:mod:`.users`) and
attribute inference (:mod:`.attribute`)."""

"""Small Python programs the stack tests sample with a real py-spy: each prints ``ready``
once it is where the test expects to find it."""

WAITING_FOR_BATCH = """
import queue
batches = queue.Queue()

class Batches:
    def __next__(self):
        return batches.get()

def train():
    print("ready", flush=True)
    next(Batches())

train()
"""
"""A training loop blocked on its next batch: ``queue.get`` under ``Batches.__next__``."""

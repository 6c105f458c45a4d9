"""Reading bytecode: one normalized instruction stream for CPython 3.11, 3.12 and 3.13.

>>> from numpile_capture.bytecode import normalized_instructions
>>> [inst.opname for inst in normalized_instructions((lambda x: x).__code__)]
['LOAD_FAST', 'RETURN_VALUE']
"""

from .instruction import Instruction as Instruction
from .instruction import normalized_instructions as normalized_instructions

__all__ = ["Instruction", "normalized_instructions"]

# Types only, no compiled module: what the stubs of the compiled modules call a buffer.
# Any object with the buffer protocol.  NumPy's types give arrays __buffer__ only from
# Python 3.12 on, so for Python 3.11 (zarrfast's oldest) arrays are named as well.
from typing import TypeAlias

import numpy as np
from typing_extensions import Buffer as _BufferProtocol

Buffer: TypeAlias = _BufferProtocol | np.ndarray

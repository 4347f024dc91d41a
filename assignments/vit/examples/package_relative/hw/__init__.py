from .patches import patchify
from .attention import MultiHeadSelfAttention
from .model import VisionTransformer

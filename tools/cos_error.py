import torch
torch.manual_seed(0)
for lim in (1.0, 10.0, 100.0, 1e3, 1e4, 1e5):
    x = (torch.rand(1_000_000) * 2 - 1) * lim
    eager = torch.cos(x)
    truth = torch.cos(x.double())
    shift = torch.sin(x + torch.tensor(torch.pi / 2, dtype=torch.float32))
    half = 1 - 2 * torch.sin(x * 0.5) ** 2
    f = lambda a, b: (a.double() - b.double()).abs().max().item()
    print(f"|x|<={lim:g}: eager-truth {f(eager, truth):.2e}  shift-eager {f(shift, eager):.2e}  "
          f"half-eager {f(half, eager):.2e}  half-truth {f(half, truth):.2e}")

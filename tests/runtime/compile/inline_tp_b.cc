#include "inline_tp.h"

void FromB() {
  InlineEmit(2);
  TemplateEmit<int>(20);
  TemplateEmit<short>(3);
}

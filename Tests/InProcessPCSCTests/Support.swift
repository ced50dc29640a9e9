import Foundation
import InProcessPCSC
import PCSC
import Testing

import { runBusContract } from './bus-contract.case.js'
import { createInProcessBus } from './in-process-bus.js'

runBusContract('in-process', async () => createInProcessBus())
